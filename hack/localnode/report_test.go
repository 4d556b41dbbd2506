package main

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/roomkeeper/roomkeeper/hack/internal/devlog"
)

// TestAnExitTheAPIServerRefusedIsReportedWhenItTakesIt: the API server
// refuses the status write that reports a process's exit (here an
// admission policy; in a soak, an API server too busy to answer in time).
// The node writes it again until it is taken, as a kubelet does: the pod
// ends Failed, and the operator sees the map's process is gone.
func TestAnExitTheAPIServerRefusedIsReportedWhenItTakesIt(t *testing.T) {
	t.Parallel()
	const node = "node-refused"
	ns := newNamespace(t)
	lift := refusePodFailures(t, ns)
	var refused atomic.Bool
	startAgentLogged(t, config{
		kubeconfig: kubeconfigPath, nodeName: node, workdir: t.TempDir(),
		images: map[string]string{fakeImage: fakeServer}, addressPrefix: "127.0.14.", nodeIP: "127.0.0.1",
	}, devlog.New(writerFunc(func(p []byte) (int, error) {
		if bytes.Contains(p, []byte("Updating pod status failed")) {
			refused.Store(true)
		}
		return len(p), nil
	})))
	createPod(t, newPod(ns, "refused", node, withEnv(
		corev1.EnvVar{Name: "EXIT_AFTER", Value: "300ms"}, corev1.EnvVar{Name: "EXIT_CODE", Value: "3"})))

	eventually(t, "the exit's status write to be refused", func() (bool, string) { return refused.Load(), "" })
	if pod := getPod(t, ns, "refused"); isTerminal(pod) {
		t.Fatalf("the pod is %s through a policy that refuses it", pod.Status.Phase)
	}
	lift()
	pod := waitPod(t, ns, "refused", "the exit to be reported once the API server takes it", isTerminal)
	if pod.Status.Phase != corev1.PodFailed {
		t.Fatalf("phase %s, want Failed", pod.Status.Phase)
	}
}

func getPod(t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	pod, err := clientset.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

// refusePodFailures makes the API server refuse to mark a pod of ns
// Failed, and returns the function that lifts it. It returns once a
// probe pod's such write is refused: a policy takes effect a moment after
// it is made.
func refusePodFailures(t *testing.T, ns string) (lift func()) {
	t.Helper()
	ctx := context.Background()
	name := "refuse-failed-pods-" + ns
	policy := &admissionv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: new(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{Operations: []admissionv1.OperationType{admissionv1.Update},
					Rule: admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods/status"}}}}}},
			Validations: []admissionv1.Validation{{Expression: "object.status.phase != 'Failed'", Message: "refused by the test"}},
		}}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
			MatchResources: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{corev1.LabelMetadataName: ns}}}}}
	policies := clientset.AdmissionregistrationV1()
	if _, err := policies.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := policies.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	lift = func() {
		_ = policies.ValidatingAdmissionPolicyBindings().Delete(ctx, name, metav1.DeleteOptions{})
		_ = policies.ValidatingAdmissionPolicies().Delete(ctx, name, metav1.DeleteOptions{})
	}
	t.Cleanup(lift)
	createPod(t, newPod(ns, "probe", "no-such-node"))
	eventually(t, "the policy to refuse a pod's failure", func() (bool, string) {
		pod := getPod(t, ns, "probe")
		pod.Status.Phase = corev1.PodFailed
		_, err := clientset.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		return err != nil, "the write was taken"
	})
	return lift
}
