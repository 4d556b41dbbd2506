package controllers

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
)

// TestRoomPodsMeetTheRestrictedPodSecurityStandard: a namespace that
// enforces the restricted Pod Security Standard (the API server's own
// PodSecurity admission, as a hardened cluster runs it) gets its rooms'
// pods: the pod builder asks for nothing it refuses.
func TestRoomPodsMeetTheRestrictedPodSecurityStandard(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	namespace := &corev1.Namespace{}
	g.Expect(k8s.Get(ctx, key("", ns), namespace)).To(Succeed())
	namespace.Labels["pod-security.kubernetes.io/enforce"] = "restricted"
	g.Expect(k8s.Update(ctx, namespace)).To(Succeed())
	createRoom(ctx, t, ns, newGameRoom("demo", withMap("town")))
	g.Eventually(func() error { return k8s.Get(ctx, key(ns, "demo-town"), &corev1.Pod{}) }).Should(Succeed(),
		"no pod: the API server refused it (see the manager's log)")
}
