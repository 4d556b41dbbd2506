package attack

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/heartbeat"
)

// TestARoomServerWritesOnlyItsOwnLease: the room servers' Role may create
// and patch every Lease in its namespace; config/policy lets a map pod, by
// its pod-bound token, make only its own Lease (named after it, owned and
// held by it, the operator's label), and then change nothing of it but
// spec.renewTime. A pod that makes or renews another pod's Lease (keeping
// a dead map "alive"), squats another application's Lease name, makes a
// Lease that would outlive it, or rewrites its own is refused; a token
// bound to no pod writes none; no room server deletes a Lease.
func TestARoomServerWritesOnlyItsOwnLease(t *testing.T) {
	ctx := caseContext(t)
	const ns = "lease-attack"
	roomServerNamespace(t, ctx, ns)
	townPod, forestPod := mapPod(t, ctx, ns, "demo-town-1"), mapPod(t, ctx, ns, "demo-forest-1")
	probePod := mapPod(t, ctx, ns, "demo-probe-1") // takes the writes sent before the policy is in force
	asTown, asForest := podCredentials(t, ctx, ns, townPod), podCredentials(t, ctx, ns, forestPod)
	town, forest, probe := ownPod(townPod), ownPod(forestPod), ownPod(probePod)

	eventually(t, policyTimeout, func() error {
		return refused(renewAs(ctx, asTown, ns, probe), "pod demo-town-1 writes only its own Lease")
	})
	if err := refused(renewAs(ctx, asTown, ns, forest), "pod demo-town-1 writes only its own Lease"); err != nil {
		t.Errorf("making another pod's Lease: %v", err)
	}
	for _, own := range []struct {
		pod heartbeat.Pod
		as  *rest.Config
	}{{town, asTown}, {forest, asForest}} {
		if err := renewAs(ctx, own.as, ns, own.pod); err != nil {
			t.Fatalf("%s may not make its own Lease: %v", own.pod.Name, err)
		}
	}
	made := lease(t, ctx, ns, town.Name)
	if made.Spec.RenewTime == nil || len(made.OwnerReferences) != 1 || made.OwnerReferences[0].UID != townPod.UID {
		t.Errorf("the town's Lease: renewed %v, owners %v", made.Spec.RenewTime, made.OwnerReferences)
	}
	forestRenewed := lease(t, ctx, ns, forest.Name).Spec.RenewTime
	if err := renewAs(ctx, asTown, ns, town); err != nil {
		t.Errorf("the town's pod may not renew its own Lease: %v", err)
	}
	if err := refused(renewAs(ctx, asTown, ns, forest), "pod demo-town-1 writes only its own Lease"); err != nil {
		t.Errorf("renewing another pod's Lease: %v", err)
	}
	if got := lease(t, ctx, ns, forest.Name).Spec.RenewTime; !got.Equal(forestRenewed) {
		t.Errorf("the forest's Lease took the town pod's renewal: %v, was %v", got, forestRenewed)
	}

	t.Run("made otherwise", func(t *testing.T) {
		cellarPod := mapPod(t, ctx, ns, "demo-cellar-1")
		asCellar, cellar := podCredentials(t, ctx, ns, cellarPod), ownPod(cellarPod)
		for what, change := range map[string]func(*coordinationv1.Lease){
			"without the operator's label": func(l *coordinationv1.Lease) { l.Labels = nil },
			"owned by nothing":             func(l *coordinationv1.Lease) { l.OwnerReferences = nil },
			"owned by another pod":         func(l *coordinationv1.Lease) { l.OwnerReferences[0].UID = townPod.UID },
			"owned by the map":             func(l *coordinationv1.Lease) { l.OwnerReferences[0].Kind = "MapInstance" },
			"held by another pod":          func(l *coordinationv1.Lease) { l.Spec.HolderIdentity = &town.Name },
			"another name":                 func(l *coordinationv1.Lease) { l.Name = "kube-scheduler" },
		} {
			l := podLease(t, cellar)
			l.Namespace = ns
			change(l)
			if err := refused(createAs(ctx, asCellar, l), "writes only its own Lease"); err != nil {
				t.Errorf("%s: %v", what, err)
			}
		}
		as := podLease(t, cellar)
		as.Namespace = ns
		if err := createAs(ctx, asCellar, as); err != nil {
			t.Errorf("the same Lease as the room server makes it: %v", err)
		}
	})

	t.Run("its own Lease rewritten", func(t *testing.T) {
		for what, patch := range map[string]string{
			"holder":   `{"spec":{"holderIdentity":"demo-forest-1"}}`,
			"duration": `{"spec":{"leaseDurationSeconds":86400}}`,
			"labels":   `{"metadata":{"labels":{"` + gamev1.LabelManagedBy + `":null}}}`,
			"owner":    `{"metadata":{"ownerReferences":null}}`,
		} {
			if err := refused(mergeLeaseAs(ctx, asTown, ns, town.Name, patch), "changes only its Lease's spec.renewTime"); err != nil {
				t.Errorf("%s: %v", what, err)
			}
		}
	})

	t.Run("a Lease that is not Roomkeeper's", func(t *testing.T) {
		gatePod := mapPod(t, ctx, ns, "demo-gate-1")
		foreign := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: gatePod.Name}}
		if err := controlPlane(t).Create(ctx, foreign); err != nil {
			t.Fatal(err)
		}
		if err := refused(renewAs(ctx, podCredentials(t, ctx, ns, gatePod), ns, ownPod(gatePod)), "writes only its own Lease"); err != nil {
			t.Error(err)
		}
	})

	t.Run("token bound to no pod", func(t *testing.T) {
		if err := refused(renewAs(ctx, podCredentials(t, ctx, ns, nil), ns, town), "pod-bound"); err != nil {
			t.Error(err)
		}
	})

	t.Run("delete", func(t *testing.T) {
		c, err := client.New(asTown, client.Options{Scheme: kube.scheme})
		if err != nil {
			t.Fatal(err)
		}
		if err := refused(c.Delete(ctx, lease(t, ctx, ns, forest.Name)), "cannot delete resource"); err != nil {
			t.Error(err)
		}
	})
}

// ownPod is pod as its room server knows itself.
func ownPod(pod *corev1.Pod) heartbeat.Pod { return heartbeat.Pod{Name: pod.Name, UID: pod.UID} }

// renewAs renews (or first makes) pod's Lease as the room server does
// (internal/heartbeat), with cfg's identity.
func renewAs(ctx context.Context, cfg *rest.Config, namespace string, pod heartbeat.Pod) error {
	reporter, err := heartbeat.New(cfg, namespace, "demo-town", time.Now)
	if err != nil {
		return err
	}
	return reporter.Renew(ctx, pod, gamev1.DefaultHeartbeatTimeout)
}

// podLease is the Lease the room server makes for pod.
func podLease(t testing.TB, pod heartbeat.Pod) *coordinationv1.Lease {
	t.Helper()
	l := &coordinationv1.Lease{}
	if err := kube.scheme.Convert(heartbeat.PodLease(pod, gamev1.DefaultHeartbeatTimeout, metav1.NowMicro()), l, nil); err != nil {
		t.Fatal(err)
	}
	return l
}

// createAs creates l with cfg's identity.
func createAs(ctx context.Context, cfg *rest.Config, l *coordinationv1.Lease) error {
	c, err := client.New(cfg, client.Options{Scheme: kube.scheme})
	if err != nil {
		return err
	}
	return c.Create(ctx, l)
}

// mergeLeaseAs sends a JSON merge patch of the Lease name with cfg's
// identity.
func mergeLeaseAs(ctx context.Context, cfg *rest.Config, namespace, name, patch string) error {
	c, err := client.New(cfg, client.Options{Scheme: kube.scheme})
	if err != nil {
		return err
	}
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	return c.Patch(ctx, l, client.RawPatch(types.MergePatchType, []byte(patch)))
}

// lease is the Lease as the API server holds it.
func lease(t testing.TB, ctx context.Context, namespace, name string) *coordinationv1.Lease {
	t.Helper()
	l := &coordinationv1.Lease{}
	if err := controlPlane(t).Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, l); err != nil {
		t.Fatal(err)
	}
	return l
}
