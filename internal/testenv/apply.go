package testenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// applyFieldOwner is the field manager of what tests and make dev apply.
const applyFieldOwner = "roomkeeper-dev"

// ApplyFile server-side applies every object in a YAML file, as `kubectl
// apply --server-side -f file` would.
func ApplyFile(ctx context.Context, c client.Client, file string) error {
	return ApplyFileIn(ctx, c, file, "")
}

// ApplyFileIn is ApplyFile with namespace given to the objects that name
// none, as `kubectl apply -n namespace -f file` does.
func ApplyFileIn(ctx context.Context, c client.Client, file, namespace string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	decoder := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		obj := &unstructured.Unstructured{}
		err := decoder.Decode(&obj.Object)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if obj.Object == nil {
			continue
		}
		if obj.GetNamespace() == "" && namespace != "" {
			obj.SetNamespace(namespace)
		}
		if err := c.Patch(ctx, obj, client.Apply, client.FieldOwner(applyFieldOwner), client.ForceOwnership); err != nil { //nolint:staticcheck // unstructured apply
			return fmt.Errorf("applying %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
}

// ApplyRoomServerStatusPolicy installs config/policy as it ships: the
// ValidatingAdmissionPolicy that keeps each room server to its own
// MapInstance's heartbeat, and its binding. The API server enforces it a
// moment later, not at once: wait for a refusal before counting on it.
func ApplyRoomServerStatusPolicy(ctx context.Context, c client.Client) error {
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	for _, name := range []string{"roomserver_status_policy.yaml", "roomserver_status_binding.yaml"} {
		if err := ApplyFile(ctx, c, filepath.Join(root, "config", "policy", name)); err != nil {
			return fmt.Errorf("config/policy/%s: %w", name, err)
		}
	}
	return nil
}
