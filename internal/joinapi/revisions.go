package joinapi

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/roomkeeper/roomkeeper/internal/content"
	"github.com/roomkeeper/roomkeeper/internal/packs"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
)

// servedPack is a pack's definitions as the join API serves them, with
// their hash (the one a map's welcome carries).
type servedPack struct {
	defs protocol.PackDefinitions
	hash string
}

// packCache keeps the definitions the join API served, and their hashes,
// by what they were made from: a built-in pack, or a GameContent revision's
// ConfigMap, which never changes (immutable, named after its content). So
// a pack is decoded, turned into definitions and hashed once, not at every
// request.
type packCache struct {
	mu    sync.Mutex
	packs map[string]servedPack // "built-in/<name>" or "<namespace>/<configmap>"
}

// maxCachedPacks bounds the cache; past it, it starts afresh.
const maxCachedPacks = 256

// builtIn is the built-in pack a map's config names (or its biome's).
func (c *packCache) builtIn(name, biome string) servedPack {
	pack := content.ForMap(name, biome)
	served, _ := c.get("built-in/"+pack.Name, func() (content.Pack, error) { return pack, nil })
	return served
}

// revision is a GameContent revision's, read from its ConfigMap.
func (c *packCache) revision(ctx context.Context, reader client.Reader, namespace, name string) (servedPack, error) {
	return c.get(namespace+"/"+name, func() (content.Pack, error) {
		cm := &corev1.ConfigMap{}
		if err := reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, cm); err != nil {
			return content.Pack{}, fmt.Errorf("reading content revision %s: %w", name, err)
		}
		return packs.Load(cm)
	})
}

func (c *packCache) get(key string, load func() (content.Pack, error)) (servedPack, error) {
	c.mu.Lock()
	served, ok := c.packs[key]
	c.mu.Unlock()
	if ok {
		return served, nil
	}
	pack, err := load()
	if err != nil {
		return servedPack{}, err
	}
	defs := pack.Definitions()
	served = servedPack{defs: defs, hash: defs.Hash()}
	c.mu.Lock()
	if c.packs == nil || len(c.packs) >= maxCachedPacks {
		c.packs = map[string]servedPack{}
	}
	c.packs[key] = served
	c.mu.Unlock()
	return served, nil
}
