package joinflags

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// TestPatientlyWaitsOutWhatIsWorthRetrying: a busy database
// (persistence_unavailable with retryAfter) and a rate limit are waited
// out as each answer says; a quarantined map and a database that is not
// configured are answered at once.
func TestPatientlyWaitsOutWhatIsWorthRetrying(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		switch r.URL.Path {
		case "/v1/namespaces/ns/gamerooms/busy/join":
			if n <= 2 {
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte(`{"code":"persistence_unavailable","message":"busy","retryAfter":1}`))
				return
			}
			_, _ = w.Write([]byte(`{"ticket":"t","endpoint":"ws://127.0.0.1:1/ws"}`))
		case "/v1/namespaces/ns/gamerooms/quarantined/join":
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"code":"map_quarantined","message":"held down","retryAfter":300}`))
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"code":"persistence_unavailable","message":"not configured"}`))
		}
	}))
	defer srv.Close()
	api := &client.JoinAPI{BaseURL: srv.URL + "/"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	join := func(room string) (client.JoinResponse, error) {
		return Patiently(ctx, func() (client.JoinResponse, error) { return api.Join(ctx, "ns", room, client.JoinRequest{}) })
	}

	start := time.Now()
	if resp, err := join("busy"); err != nil || resp.Ticket != "t" {
		t.Fatalf("a busy database: %+v, %v; want the ticket after two retries", resp, err)
	}
	if calls.Load() != 3 || time.Since(start) < 2*time.Second {
		t.Fatalf("%d calls in %v: want 3, a second apart as retryAfter says", calls.Load(), time.Since(start))
	}
	for _, room := range []string{"quarantined", "nodb"} {
		calls.Store(0)
		var apiErr *client.APIError
		if _, err := join(room); !errors.As(err, &apiErr) || calls.Load() != 1 {
			t.Fatalf("%s: %v after %d calls, want its error after one", room, err, calls.Load())
		}
	}
}
