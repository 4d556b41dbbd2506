package attack

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/heartbeat"
)

// policyTimeout bounds the wait for the API server to enforce a policy
// it was just given.
const policyTimeout = 30 * time.Second

// TestARoomServerWritesOnlyItsOwnMapsHeartbeat: the room servers' Role may
// patch every MapInstance's status in its namespace; config/policy lets a
// map pod, by its pod-bound token, write only its own map, and there only
// the heartbeat. A pod that writes another map (fake players, a heartbeat
// keeping a dead map "alive"), the endpoint players are sent to, or the
// operator's fields is refused with the field named; a token bound to no
// pod writes nothing; both pods of a handover may report.
func TestARoomServerWritesOnlyItsOwnMapsHeartbeat(t *testing.T) {
	ctx := caseContext(t)
	const ns = "status-attack"
	roomServerNamespace(t, ctx, ns)
	townPod, forestPod := mapPod(t, ctx, ns, "demo-town-1"), mapPod(t, ctx, ns, "demo-forest-1")
	town, forest := mapInstance(t, ctx, ns, "town", townPod.Name), mapInstance(t, ctx, ns, "forest", forestPod.Name)
	asTown := podCredentials(t, ctx, ns, townPod)

	eventually(t, policyTimeout, func() error {
		return refused(heartbeatAs(ctx, asTown, ns, forest.Name, 40), "pod demo-town-1 is not the pod of MapInstance demo-forest")
	})
	if err := heartbeatAs(ctx, asTown, ns, town.Name, 3); err != nil {
		t.Fatalf("the town's pod may not report its own heartbeat: %v", err)
	}
	if got := status(t, ctx, ns, town.Name); got.Players != 3 || got.LastHeartbeat == nil {
		t.Errorf("the town's own heartbeat did not land: players %d, lastHeartbeat %v", got.Players, got.LastHeartbeat)
	}
	if got := status(t, ctx, ns, forest.Name); got.Players != 0 || got.LastHeartbeat != nil {
		t.Errorf("the forest took the town pod's heartbeat: players %d, lastHeartbeat %v", got.Players, got.LastHeartbeat)
	}

	t.Run("operator's fields", func(t *testing.T) {
		for field, value := range map[string]any{
			"endpoint":     "ws://attacker.example:7350/ws",
			"phase":        "Quarantined",
			"podName":      "demo-forest-1",
			"restartCount": 7,
			"conditions":   []any{map[string]any{"type": "Ready", "status": "True", "reason": "Faked", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}},
		} {
			err := applyStatusAs(ctx, asTown, ns, town.Name, map[string]any{"players": 1, field: value})
			if err := refused(err, "it changed status."+field); err != nil {
				t.Errorf("apply of status.%s: %v", field, err)
			}
		}
		err := mergeStatusAs(ctx, asTown, ns, town.Name, `{"status":{"podName":null,"endpoint":null}}`)
		if err := refused(err, "status.endpoint"); err != nil {
			t.Errorf("a merge patch removing the operator's fields: %v", err)
		}
		if got := status(t, ctx, ns, town.Name); got.Endpoint != town.Status.Endpoint || got.PodName != townPod.Name || got.Phase != gamev1.MapReady {
			t.Errorf("the operator's fields changed: %+v", got)
		}
	})

	t.Run("token bound to no pod", func(t *testing.T) {
		unbound := podCredentials(t, ctx, ns, nil)
		if err := refused(heartbeatAs(ctx, unbound, ns, town.Name, 5), "pod-bound"); err != nil {
			t.Error(err)
		}
	})

	t.Run("handover", func(t *testing.T) {
		nextPod := mapPod(t, ctx, ns, "demo-town-2")
		asNext := podCredentials(t, ctx, ns, nextPod)
		if err := refused(heartbeatAs(ctx, asNext, ns, town.Name, 0), "pod demo-town-2 is not the pod"); err != nil {
			t.Errorf("before the handover: %v", err)
		}
		handOver(t, ctx, ns, town.Name, func(s *gamev1.MapInstanceStatus) {
			s.Handover = &gamev1.Handover{From: townPod.Name, To: nextPod.Name, Started: metav1.Now()}
		})
		for pod, cfg := range map[string]*rest.Config{townPod.Name: asTown, nextPod.Name: asNext} {
			if err := heartbeatAs(ctx, cfg, ns, town.Name, 2); err != nil {
				t.Errorf("%s during the handover: %v", pod, err)
			}
		}
		handOver(t, ctx, ns, town.Name, func(s *gamev1.MapInstanceStatus) { s.Handover, s.PodName = nil, nextPod.Name })
		if err := refused(heartbeatAs(ctx, asTown, ns, town.Name, 9), "pod demo-town-1 is not the pod"); err != nil {
			t.Errorf("the old pod after the handover: %v", err)
		}
	})

	t.Run("first pod not yet seen", func(t *testing.T) {
		crypt := mapInstance(t, ctx, ns, "crypt", "") // the operator writes podName once the pod runs
		asCrypt := podCredentials(t, ctx, ns, mapPod(t, ctx, ns, crypt.Name))
		if err := heartbeatAs(ctx, asCrypt, ns, crypt.Name, 1); err != nil {
			t.Errorf("the pod named after its map, before status names it: %v", err)
		}
		if err := refused(heartbeatAs(ctx, asTown, ns, crypt.Name, 1), "pod demo-town-1 is not the pod"); err != nil {
			t.Errorf("another map's pod, on a map whose status names no pod: %v", err)
		}
	})

	t.Run("no status written yet", func(t *testing.T) {
		// The operator writes nothing while the first pod is pending: the
		// pod's first heartbeat makes the status, the CRD's defaults with it.
		admin := controlPlane(t)
		bare := &gamev1.MapInstance{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: room + "-cellar"},
			Spec: gamev1.MapInstanceSpec{RoomName: room, MapName: "cellar"}}
		if err := admin.Create(ctx, bare); err != nil {
			t.Fatal(err)
		}
		asCellar := podCredentials(t, ctx, ns, mapPod(t, ctx, ns, bare.Name))
		if err := heartbeatAs(ctx, asCellar, ns, bare.Name, 1); err != nil {
			t.Errorf("the first heartbeat of a map without status: %v", err)
		}
		if err := refused(applyStatusAs(ctx, asCellar, ns, bare.Name, map[string]any{"restartCount": 3}), "status.restartCount"); err != nil {
			t.Errorf("a restart count other than the default: %v", err)
		}
	})

	t.Run("operator unaffected", func(t *testing.T) {
		handOver(t, ctx, ns, forest.Name, func(s *gamev1.MapInstanceStatus) { s.Endpoint = "ws://10.0.0.99:7350/ws" })
	})
}

// refused is nil when err is the policy's refusal and its message says
// want.
func refused(err error, want string) error {
	switch {
	case err == nil:
		return fmt.Errorf("allowed; want refused with %q", want)
	case !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want):
		return fmt.Errorf("want a Forbidden refusal saying %q, got %w", want, err)
	}
	return nil
}

// heartbeatAs sends the room server's heartbeat (internal/heartbeat) as
// cfg's identity to the MapInstance name.
func heartbeatAs(ctx context.Context, cfg *rest.Config, namespace, name string, players int) error {
	reporter, err := heartbeat.New(cfg, namespace, name, time.Now)
	if err != nil {
		return err
	}
	return reporter.Apply(ctx, heartbeat.Report{Players: players, ActivePlayers: players, Tick: 100})
}

// applyStatusAs server-side applies status as the room servers' field
// manager, with cfg's identity, taking fields from any other manager.
func applyStatusAs(ctx context.Context, cfg *rest.Config, namespace, name string, status map[string]any) error {
	c, err := client.New(cfg, client.Options{Scheme: kube.scheme})
	if err != nil {
		return err
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gamev1.GroupVersion.String(), "kind": "MapInstance",
		"metadata": map[string]any{"namespace": namespace, "name": name}, "status": status}}
	return c.Status().Patch(ctx, obj, client.Apply, client.FieldOwner(gamev1.FieldManagerRoomServer), client.ForceOwnership) //nolint:staticcheck // unstructured apply
}

// mergeStatusAs sends a JSON merge patch of the status with cfg's identity.
func mergeStatusAs(ctx context.Context, cfg *rest.Config, namespace, name, patch string) error {
	c, err := client.New(cfg, client.Options{Scheme: kube.scheme})
	if err != nil {
		return err
	}
	mi := &gamev1.MapInstance{}
	mi.Namespace, mi.Name = namespace, name
	return c.Status().Patch(ctx, mi, client.RawPatch(types.MergePatchType, []byte(patch)))
}

// status is the MapInstance's status as the API server holds it.
func status(t testing.TB, ctx context.Context, namespace, name string) gamev1.MapInstanceStatus {
	t.Helper()
	mi := &gamev1.MapInstance{}
	if err := controlPlane(t).Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, mi); err != nil {
		t.Fatal(err)
	}
	return mi.Status
}

// handOver changes the MapInstance's status as the operator does (its
// identity is no room server's: the policy lets it write anything).
func handOver(t testing.TB, ctx context.Context, namespace, name string, change func(*gamev1.MapInstanceStatus)) {
	t.Helper()
	admin := controlPlane(t)
	mi := &gamev1.MapInstance{}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, mi); err != nil {
		t.Fatal(err)
	}
	change(&mi.Status)
	if err := admin.Status().Update(ctx, mi); err != nil {
		t.Fatalf("the operator's status write: %v", err)
	}
}
