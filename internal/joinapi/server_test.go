package joinapi

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/roomkeeper/roomkeeper/internal/testenv"
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
	addr := testenv.MustFreeAddress(t)
	if err := Setup(m, Config{Addr: addr}); err != nil { // MaxCharactersPerRoom 0: the default cap
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
		if err := Setup(nil, Config{Addr: addr}); err != nil {
			t.Fatalf("Setup(%q): %v", addr, err)
		}
	}
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
	before, samples := series(t, "roomkeeper_join")
	destBefore, destSamples := series(t, "roomkeeper_destination")
	want(t, "join", e.join("demo", JoinRequest{}), http.StatusOK, "")
	want(t, "join", e.join("demo", JoinRequest{}), http.StatusOK, "")
	want(t, "no room", e.join("nope", JoinRequest{}), http.StatusNotFound, CodeRoomNotFound)
	e.characterCalls()
	want(t, "destination", e.destination("demo", "", DestinationRequest{Map: "town"}), http.StatusUnauthorized, CodeUnauthorized)
	after, samplesAfter := series(t, "roomkeeper_join")
	if got := after[codeOK] - before[codeOK]; got != 2 {
		t.Errorf("ok joins counted %v, want 2", got)
	}
	if got := after[string(CodeRoomNotFound)] - before[string(CodeRoomNotFound)]; got != 1 {
		t.Errorf("room_not_found joins counted %v, want 1", got)
	}
	if got := after[string(CodeUnauthorized)] - before[string(CodeUnauthorized)]; got != 0 {
		t.Errorf("unauthorized joins counted %v, want 0 (destination requests are not joins)", got)
	}
	if got := samplesAfter - samples; got != 3 {
		t.Errorf("durations observed %d, want 3 (characters calls and destination requests are not joins)", got)
	}
	destAfter, destSamplesAfter := series(t, "roomkeeper_destination")
	if got := destAfter[string(CodeUnauthorized)] - destBefore[string(CodeUnauthorized)]; got != 1 || destSamplesAfter-destSamples != 1 {
		t.Errorf("destination requests counted %v, durations %d; want 1 and 1", got, destSamplesAfter-destSamples)
	}
}

// characterCalls makes a characters call, which the join metrics ignore.
func (e *env) characterCalls() {
	e.do(http.MethodGet, e.roomPath("demo")+"/characters", "k", nil)
}

// series reads <prefix>_requests_total (per code) and the sample count of
// <prefix>_request_duration_seconds from controller-runtime's registry. The
// counter is missing until its first request, the histogram never is.
func series(t *testing.T, prefix string) (map[string]float64, uint64) {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counts, samples, found := map[string]float64{}, uint64(0), 0
	for _, f := range families {
		switch f.GetName() {
		case prefix + "_requests_total":
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "code" {
						counts[l.GetValue()] = m.GetCounter().GetValue()
					}
				}
			}
		case prefix + "_request_duration_seconds":
			found++
			samples = f.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	if found != 1 {
		t.Fatalf("no %s_request_duration_seconds in the registry", prefix)
	}
	return counts, samples
}
