package attack

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// priorityLevelHeader is where the API server says which priority level
// (API Priority and Fairness) it ran a request in.
const priorityLevelHeader = "X-Kubernetes-PF-PriorityLevel-UID"

// TestARoomServersHeartbeatsRunInTheirOwnPriorityLevel: a room server's
// heartbeats (or a flood of them from a compromised pod) run in
// config/policy's priority level, a few at a time, so they cannot take
// the API server from the operator; another ServiceAccount's requests,
// the operator's among them, do not.
func TestARoomServersHeartbeatsRunInTheirOwnPriorityLevel(t *testing.T) {
	ctx := caseContext(t)
	const ns = "flow-attack"
	roomServerNamespace(t, ctx, ns)
	pod := mapPod(t, ctx, ns, "demo-town-1")
	town := mapInstance(t, ctx, ns, "town", pod.Name)
	level := &flowcontrolv1.PriorityLevelConfiguration{}
	if err := controlPlane(t).Get(ctx, client.ObjectKey{Name: "roomserver-heartbeats"}, level); err != nil {
		t.Fatalf("config/policy's priority level: %v", err)
	}

	asPod, levels := recordingLevels(podCredentials(t, ctx, ns, pod))
	eventually(t, policyTimeout, func() error {
		if err := heartbeatAs(ctx, asPod, ns, town.Name, 2); err != nil {
			return err
		}
		if got := levels.last(); got != string(level.UID) {
			return fmt.Errorf("the heartbeat ran in priority level %q, want %q (roomserver-heartbeats)", got, level.UID)
		}
		return nil
	})

	asOther, otherLevels := recordingLevels(serviceAccountCredentials(t, ctx, ns, "someone-else"))
	other, err := client.New(asOther, client.Options{Scheme: kube.scheme})
	if err != nil {
		t.Fatal(err)
	}
	// The operator's way to write a status: an update (forbidden to this
	// account, and classified all the same).
	_ = other.Status().Update(ctx, town)
	if got := otherLevels.last(); got == "" || got == string(level.UID) {
		t.Errorf("another ServiceAccount's status update ran in priority level %q; want one that is not the room servers' (%s)", got, level.UID)
	}
}

// levelLog is the priority levels of the responses a client got.
type levelLog struct {
	mu     sync.Mutex
	levels []string
}

func (l *levelLog) last() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.levels) == 0 {
		return ""
	}
	return l.levels[len(l.levels)-1]
}

// recordingLevels is cfg with every response's priority level recorded.
func recordingLevels(cfg *rest.Config) (*rest.Config, *levelLog) {
	log := &levelLog{}
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if err == nil {
				log.mu.Lock()
				log.levels = append(log.levels, resp.Header.Get(priorityLevelHeader))
				log.mu.Unlock()
			}
			return resp, err
		})
	})
	return cfg, log
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// serviceAccountCredentials is a token of a new ServiceAccount name in
// namespace, bound to no pod.
func serviceAccountCredentials(t testing.TB, ctx context.Context, namespace, name string) *rest.Config {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if err := controlPlane(t).Create(ctx, sa); err != nil {
		t.Fatalf("ServiceAccount %s/%s: %v", namespace, name, err)
	}
	return tokenCredentials(t, ctx, namespace, name, nil)
}
