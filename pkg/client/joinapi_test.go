package client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestJoinAPIErrors checks how answers become *APIError: the join API's
// JSON errors keep code and retryAfter, anything else (a proxy's page)
// keeps its status; RetryAfter names those worth trying again. The real join API is exercised in cmd/roomctl.
func TestJoinAPIErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/namespaces/ns/gamerooms/quarantined/join":
			w.Header().Set("Retry-After", "42")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"code":"map_quarantined","message":"held down","retryAfter":42}`))
		case "/v1/namespaces/ns/gamerooms/limited/join":
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"code":"rate_limited","message":"slow down"}`))
		case "/v1/namespaces/ns/gamerooms/busydb/join":
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"code":"persistence_unavailable","message":"try again later","retryAfter":2}`))
		case "/v1/namespaces/ns/gamerooms/nodb/join":
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"code":"persistence_unavailable","message":"not configured"}`))
		default:
			http.Error(w, "<html>bad gateway</html>", http.StatusBadGateway)
		}
	}))
	defer srv.Close()
	api := &JoinAPI{BaseURL: srv.URL + "/"}
	ctx := context.Background()

	_, err := api.Join(ctx, "ns", "quarantined", JoinRequest{})
	var e *APIError
	if !errors.As(err, &e) || e.Code != "map_quarantined" || e.Status != 503 || e.RetryAfter != 42*time.Second {
		t.Fatalf("quarantined: %#v", err)
	}
	if wait, ok := RetryAfter(err); !ok || wait != 42*time.Second {
		t.Fatalf("RetryAfter = %v, %v", wait, ok)
	}
	_, err = api.Join(ctx, "ns", "limited", JoinRequest{})
	if wait, ok := RetryAfter(err); !ok || wait != 3*time.Second {
		t.Fatalf("rate limited: RetryAfter = %v, %v (%v); want the header's 3s", wait, ok, err)
	}
	_, err = api.Join(ctx, "ns", "busydb", JoinRequest{})
	if wait, ok := RetryAfter(err); !ok || wait != 2*time.Second {
		t.Fatalf("a busy database: RetryAfter = %v, %v (%v); want 2s", wait, ok, err)
	}
	_, err = api.Join(ctx, "ns", "nodb", JoinRequest{})
	if _, ok := RetryAfter(err); ok {
		t.Fatal("a database that is not configured (no retryAfter) is not worth retrying")
	}
	_, err = api.Characters(ctx, "ns", "other", "k")
	if !errors.As(err, &e) || e.Status != http.StatusBadGateway || e.Code != "" || e.Message != "<html>bad gateway</html>" {
		t.Fatalf("proxy page: %#v", err)
	}
	if _, ok := RetryAfter(err); ok {
		t.Fatal("a bad gateway is not a join API answer to retry")
	}
}
