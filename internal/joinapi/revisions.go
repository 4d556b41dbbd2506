package joinapi

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/roomkeeper/roomkeeper/internal/packs"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
)

// revisionCache keeps the definitions of the GameContent revisions the
// join API served, by ConfigMap: a revision never changes (its ConfigMap
// is immutable and named after its content), so a pack is decoded once,
// not at every request.
type revisionCache struct {
	mu   sync.Mutex
	defs map[string]protocol.PackDefinitions // namespace/name -> definitions
}

// maxRevisions bounds the cache; past it, it starts afresh.
const maxRevisions = 256

func (c *revisionCache) definitions(ctx context.Context, reader client.Reader, namespace, name string) (protocol.PackDefinitions, bool, error) {
	key := namespace + "/" + name
	c.mu.Lock()
	d, ok := c.defs[key]
	c.mu.Unlock()
	if ok {
		return d, true, nil
	}
	cm := &corev1.ConfigMap{}
	if err := reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, cm); err != nil {
		return protocol.PackDefinitions{}, false, fmt.Errorf("reading content revision %s: %w", name, err)
	}
	pack, err := packs.Load(cm)
	if err != nil {
		return protocol.PackDefinitions{}, false, err
	}
	d = pack.Definitions()
	c.mu.Lock()
	if c.defs == nil || len(c.defs) >= maxRevisions {
		c.defs = map[string]protocol.PackDefinitions{}
	}
	c.defs[key] = d
	c.mu.Unlock()
	return d, true, nil
}
