package joinapi

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// TestServerRunsWithTheManager adds the join API to a manager of its own
// with Setup, as cmd/manager does, and checks it serves while the manager
// runs and stops with it.
func TestServerRunsWithTheManager(t *testing.T) {
	e := newEnv(t)
	m, err := newManager(restConfig)
	if err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	if err := Setup(m, addr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(e.ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- m.Start(ctx) }()
	defer cancel()

	url := "http://" + addr + e.roomPath("nope") + "/join"
	e.poll(func() reply { return post(t, url) }, func(r reply) bool {
		return r.status == http.StatusNotFound && errorCode(r) == CodeRoomNotFound
	})
	cancel()
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatalf("the manager stopped with %v", err)
		}
	case <-time.After(pollTimeout):
		t.Fatal("the manager did not stop")
	}
	if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		t.Fatal("the join API still listens after the manager stopped")
	}
}

// TestSetupDisabled: "0" (and "") add nothing; a nil manager would panic
// if Setup got as far as using it.
func TestSetupDisabled(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"0", ""} {
		if err := Setup(nil, addr); err != nil {
			t.Fatalf("Setup(%q): %v", addr, err)
		}
	}
}

// freeAddr is a loopback address nothing listens on right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// post sends an empty POST; a refused connection is status 0.
func post(t *testing.T, url string) reply {
	t.Helper()
	resp, err := http.Post(url, "application/json", nil)
	if err != nil {
		return reply{}
	}
	defer resp.Body.Close()
	var body json.RawMessage
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return reply{status: resp.StatusCode, header: resp.Header, body: body}
}

// TestJoinMetrics is not parallel: the series are process-wide, and
// parallel tests only start once the serial ones are done.
func TestJoinMetrics(t *testing.T) {
	e := newEnv(t)
	e.readyRoom("demo", "ws://10.0.0.7:7350/ws")
	before, samples := joinMetrics(t)
	want(t, "join", e.join("demo", JoinRequest{}), http.StatusOK, "")
	want(t, "join", e.join("demo", JoinRequest{}), http.StatusOK, "")
	want(t, "no room", e.join("nope", JoinRequest{}), http.StatusNotFound, CodeRoomNotFound)
	e.characterCalls()
	after, samplesAfter := joinMetrics(t)
	if got := after[codeOK] - before[codeOK]; got != 2 {
		t.Errorf("ok joins counted %v, want 2", got)
	}
	if got := after[string(CodeRoomNotFound)] - before[string(CodeRoomNotFound)]; got != 1 {
		t.Errorf("room_not_found joins counted %v, want 1", got)
	}
	if got := samplesAfter - samples; got != 3 {
		t.Errorf("durations observed %d, want 3 (characters calls are not joins)", got)
	}
}

// characterCalls makes a characters call, which the join metrics ignore.
func (e *env) characterCalls() {
	e.do(http.MethodGet, e.roomPath("demo")+"/characters", "k", nil)
}

// joinMetrics reads the join series from controller-runtime's registry:
// the counter per code and the histogram's sample count.
func joinMetrics(t *testing.T) (map[string]float64, uint64) {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counts, samples, found := map[string]float64{}, uint64(0), 0
	for _, f := range families {
		switch f.GetName() {
		case "roomkeeper_join_requests_total":
			found++
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "code" {
						counts[l.GetValue()] = m.GetCounter().GetValue()
					}
				}
			}
		case "roomkeeper_join_request_duration_seconds":
			found++
			samples = f.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	if found != 2 {
		t.Fatalf("found %d of the 2 join series in the registry", found)
	}
	return counts, samples
}
