package main

import (
	"context"
	"fmt"
	"runtime"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// How the Node stays alive, as a kubelet does it: the node lifecycle
// controller marks a node NotReady when both go stale for 40 s by default.
const (
	leaseNamespace       = "kube-node-lease"
	leaseDurationSeconds = 40
	leaseRenewInterval   = 10 * time.Second
	heartbeatInterval    = 40 * time.Second
	kubeletVersion       = "v0.0.0-localnode"
)

// nodeObject is the Node the agent creates when there is none.
func nodeObject(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name: name,
		Labels: map[string]string{
			corev1.LabelHostname:   name,
			corev1.LabelOSStable:   runtime.GOOS,
			corev1.LabelArchStable: runtime.GOARCH,
		},
	}}
}

// nodeStatus is the Node's status at now, with address ip, keeping the
// transition times of conditions in old whose status did not change.
func nodeStatus(old corev1.NodeStatus, ip string, now metav1.Time) corev1.NodeStatus {
	resources := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("16"),
		corev1.ResourceMemory: resource.MustParse("32Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	conditions := []corev1.NodeCondition{
		nodeCondition(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "localnode is running pods as local processes"),
		nodeCondition(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "localnode does not track memory"),
		nodeCondition(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "localnode does not track disk"),
		nodeCondition(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "localnode does not track PIDs"),
	}
	for i := range conditions {
		c := &conditions[i]
		c.LastHeartbeatTime, c.LastTransitionTime = now, now
		for _, o := range old.Conditions {
			if o.Type == c.Type && o.Status == c.Status && !o.LastTransitionTime.IsZero() {
				c.LastTransitionTime = o.LastTransitionTime
			}
		}
	}
	return corev1.NodeStatus{
		Capacity:    resources,
		Allocatable: resources.DeepCopy(),
		Phase:       corev1.NodeRunning,
		Conditions:  conditions,
		Addresses:   []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}},
		NodeInfo: corev1.NodeSystemInfo{
			KubeletVersion:  kubeletVersion,
			OperatingSystem: runtime.GOOS,
			Architecture:    runtime.GOARCH,
		},
	}
}

func nodeCondition(t corev1.NodeConditionType, s corev1.ConditionStatus, reason, message string) corev1.NodeCondition {
	return corev1.NodeCondition{Type: t, Status: s, Reason: reason, Message: message}
}

// registerNode creates the Node if it is missing and reports it Ready at ip.
func registerNode(ctx context.Context, c kubernetes.Interface, name, ip string) (*corev1.Node, error) {
	_, err := c.CoreV1().Nodes().Create(ctx, nodeObject(name), metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("registering node %s: %w", name, err)
	}
	return updateNodeStatus(ctx, c, name, ip)
}

// updateNodeStatus writes a fresh status, which is the heartbeat.
func updateNodeStatus(ctx context.Context, c kubernetes.Interface, name, ip string) (*corev1.Node, error) {
	var node *corev1.Node
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		current, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		current.Status = nodeStatus(current.Status, ip, metav1.Now())
		node, err = c.CoreV1().Nodes().UpdateStatus(ctx, current, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("updating the status of node %s: %w", name, err)
	}
	return node, nil
}

// renewLease creates or renews the node's Lease, owned by the Node so it is
// collected with it.
func renewLease(ctx context.Context, c kubernetes.Interface, node *corev1.Node) error {
	leases := c.CoordinationV1().Leases(leaseNamespace)
	now := metav1.NewMicroTime(time.Now())
	lease, err := leases.Get(ctx, node.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		lease = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
			Name: node.Name, Namespace: leaseNamespace,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID,
			}},
		}}
		lease.Spec = leaseSpec(node.Name, now)
		_, err = leases.Create(ctx, lease, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	lease.Spec = leaseSpec(node.Name, now)
	_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	return err
}

func leaseSpec(holder string, now metav1.MicroTime) coordinationv1.LeaseSpec {
	return coordinationv1.LeaseSpec{
		HolderIdentity:       ptr.To(holder),
		LeaseDurationSeconds: ptr.To[int32](leaseDurationSeconds),
		RenewTime:            &now,
	}
}

// keepNodeAlive renews the Lease and the Ready heartbeat until ctx ends.
// Failures are logged and retried on the next tick.
func (a *agent) keepNodeAlive(ctx context.Context, node *corev1.Node) {
	leaseTick := time.NewTicker(leaseRenewInterval)
	defer leaseTick.Stop()
	heartbeatTick := time.NewTicker(heartbeatInterval)
	defer heartbeatTick.Stop()
	for {
		if err := renewLease(ctx, a.client, node); err != nil && ctx.Err() == nil {
			a.log.Error(err, "Renewing the node lease failed")
		}
		select {
		case <-ctx.Done():
			return
		case <-leaseTick.C:
		case <-heartbeatTick.C:
			if _, err := updateNodeStatus(ctx, a.client, node.Name, a.cfg.nodeIP); err != nil && ctx.Err() == nil {
				a.log.Error(err, "Node heartbeat failed")
			}
		}
	}
}
