// Package packs finds the content pack a map runs: a GameContent of the
// room's namespace that the map's config names, else the built-in pack of
// that name (or of the map's biome). The operator, which builds the map's
// pod, and the join API, which serves the pack's definitions to players,
// find it alike.
package packs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/content"
)

// FileKey is the key of a revision's ConfigMap that holds the pack's JSON
// form (content.Decode), and the file the map pod reads.
const FileKey = "pack.json"

// LabelContent names the GameContent a revision's ConfigMap holds.
const LabelContent = "game.roomkeeper.dev/content"

// Source is where a map's pack comes from.
type Source struct {
	// Name is the pack the map's config names; "" for its biome's.
	Name string
	// Content is the GameContent of that name, nil when the map runs a
	// built-in pack.
	Content *gamev1.GameContent
}

// ErrNotFound: the name is neither a GameContent of the namespace nor a
// built-in pack.
var ErrNotFound = errors.New("no such content pack")

// Find is the source of the pack named name in namespace: its GameContent,
// or the built-in pack of that name when the namespace has none.
func Find(ctx context.Context, reader client.Reader, namespace, name string) (Source, error) {
	if name == "" {
		return Source{}, nil
	}
	gc := &gamev1.GameContent{}
	err := reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, gc)
	switch {
	case err == nil:
		return Source{Name: name, Content: gc}, nil
	case !apierrors.IsNotFound(err):
		return Source{}, fmt.Errorf("reading GameContent %s: %w", name, err)
	case slices.Contains(content.Names(), name):
		return Source{Name: name}, nil
	}
	return Source{}, fmt.Errorf("%w: no GameContent %s in namespace %s, and no built-in pack of that name (%s)",
		ErrNotFound, name, namespace, strings.Join(content.Names(), ", "))
}

// Revision is the GameContent's valid revision the maps run: its
// ConfigMap, or "" when it was never found valid.
func (s Source) Revision() (revision, configMap string) {
	if s.Content == nil {
		return "", ""
	}
	return s.Content.Status.Revision, s.Content.Status.ConfigMap
}

// Problem is what is wrong with the GameContent's spec as the operator
// last saw it ("" when it is valid or not checked yet).
func (s Source) Problem() string {
	if s.Content == nil {
		return ""
	}
	c := meta.FindStatusCondition(s.Content.Status.Conditions, gamev1.ConditionValid)
	if c == nil || c.Status != "False" {
		return ""
	}
	return c.Message
}

// Parse reads a GameContent's spec as a pack named after it, unchecked.
func Parse(gc *gamev1.GameContent) (content.Pack, error) {
	named := struct {
		Name string `json:"name"`
		gamev1.GameContentSpec
	}{gc.Name, gc.Spec}
	raw, err := json.Marshal(named)
	if err != nil {
		return content.Pack{}, err
	}
	return content.Parse(raw)
}

// Check parses and validates a GameContent's spec; each problem names its
// field from the object's root (spec.items[3].slots).
func Check(gc *gamev1.GameContent) (content.Pack, error) {
	p, err := Parse(gc)
	if err != nil {
		return content.Pack{}, fmt.Errorf("spec: %w", err)
	}
	if err := p.Validate(); err != nil {
		lines := strings.Split(err.Error(), "\n")
		for i, l := range lines {
			lines[i] = "spec." + l
		}
		return content.Pack{}, errors.New(strings.Join(lines, "\n"))
	}
	return p, nil
}

// Load reads the pack of a revision's ConfigMap, checked.
func Load(cm *corev1.ConfigMap) (content.Pack, error) {
	data, ok := cm.Data[FileKey]
	if !ok {
		return content.Pack{}, fmt.Errorf("ConfigMap %s has no %s", cm.Name, FileKey)
	}
	return content.Decode([]byte(data))
}
