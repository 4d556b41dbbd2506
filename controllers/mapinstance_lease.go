package controllers

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
)

// A map pod's liveness comes two ways (docs/operations.md, "Heartbeats"):
// the heartbeat in its MapInstance's status, and between those a renewal
// of a coordination.k8s.io Lease named after the pod, which costs the API
// server about a third of a status apply (docs/benchmarks.md, "What each
// write costs the API server"). The pod makes its Lease itself, owned by
// the pod so that it goes with it (internal/heartbeat), as a kubelet
// makes its node's; the operator only reads them, from its cache, and
// takes the later of the two signals. A Lease left by an earlier pod of
// the same name counts for nothing: a sign of life from before the pod
// started is none (heartbeatOverdue). The operator may create and patch
// Leases only because it grants the map pods' Role that (RBAC lets no
// one grant what they do not hold).

// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;patch

// renewedAt is when the pod named holder last renewed lease; zero when
// never, or when lease is not that pod's.
func renewedAt(lease *coordinationv1.Lease, holder string) time.Time {
	if lease == nil || lease.Spec.RenewTime == nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != holder {
		return time.Time{}
	}
	return lease.Spec.RenewTime.Time
}

// lastHeard is the later of the status' heartbeat and the Lease's
// renewal; zero when the pod was heard neither way.
func lastHeard(status *gamev1.MapInstanceStatus, renewed time.Time) time.Time {
	if hb := status.LastHeartbeat; hb != nil && hb.After(renewed) {
		return hb.Time
	}
	return renewed
}

// leaseRenewed is when the pod named pod in namespace last renewed its
// Lease, as the cache has it; zero when it has none.
func (r *MapInstanceReconciler) leaseRenewed(ctx context.Context, namespace, pod string) (time.Time, error) {
	lease := &coordinationv1.Lease{}
	err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: pod}, lease)
	switch {
	case apierrors.IsNotFound(err):
		return time.Time{}, nil
	case err != nil:
		return time.Time{}, fmt.Errorf("reading pod %s's Lease: %w", pod, err)
	}
	return renewedAt(lease, pod), nil
}

// readLease learns when the pod serving the map last renewed its Lease.
func (r *MapInstanceReconciler) readLease(ctx context.Context, s *mapScope) (err error) {
	s.renewed = time.Time{}
	if s.pod == nil {
		return nil
	}
	s.renewed, err = r.leaseRenewed(ctx, s.pod.Namespace, s.pod.Name)
	return err
}
