package controllers

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
)

// TestRoomPodsMeetTheRestrictedPodSecurityStandard: a namespace that
// enforces the restricted Pod Security Standard (the API server's own
// PodSecurity admission, as a hardened cluster runs it) gets its rooms'
// pods: the pod builder asks for nothing it refuses.
func TestRoomPodsMeetTheRestrictedPodSecurityStandard(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	enforcePodSecurity(ctx, g, ns, "restricted")
	createRoom(ctx, t, ns, newGameRoom("demo", withMap("town")))
	g.Eventually(func() error { return k8s.Get(ctx, key(ns, "demo-town"), &corev1.Pod{}) }).Should(Succeed(),
		"no pod: the API server refused it (see the manager's log)")
}

// TestAForbiddenPodIsReportedAndRetried: a HostPort room in a namespace
// that enforces the restricted standard (which refuses hostPort) says why
// it has no pod, PodForbidden with the API server's answer, and gets its
// pod once the namespace allows it: the operator keeps trying.
func TestAForbiddenPodIsReportedAndRetried(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	enforcePodSecurity(ctx, g, ns, "restricted")
	createRoom(ctx, t, ns, newGameRoom("demo", withMap("town"), withExposure(gamev1.Exposure{Type: gamev1.ExposureHostPort})))
	t.Cleanup(func() { // the suite's host ports are few: give this one back (envtest collects no garbage)
		_ = k8s.Delete(context.Background(), newGameRoomIn(ns, "demo"))
		_ = k8s.Delete(context.Background(), &gamev1.MapInstance{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "demo-town"}})
	})
	g.Eventually(func(g Gomega) {
		c := meta.FindStatusCondition(mapInstance(ctx, g, ns).Status.Conditions, gamev1.ConditionReady)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(gamev1.ReasonPodForbidden))
		g.Expect(c.Message).To(ContainSubstring("hostPort"))
	}).Should(Succeed())

	enforcePodSecurity(ctx, g, ns, "privileged")
	g.Eventually(func() error { return k8s.Get(ctx, key(ns, "demo-town"), &corev1.Pod{}) }, 2*time.Minute).Should(Succeed(),
		"no pod once the namespace allows it")
}

// enforcePodSecurity makes the API server's PodSecurity admission enforce
// level in namespace ns.
func enforcePodSecurity(ctx context.Context, g Gomega, ns, level string) {
	namespace := &corev1.Namespace{}
	g.Expect(k8s.Get(ctx, key("", ns), namespace)).To(Succeed())
	namespace.Labels["pod-security.kubernetes.io/enforce"] = level
	g.Expect(k8s.Update(ctx, namespace)).To(Succeed())
}
