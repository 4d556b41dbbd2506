package joinapi

import (
	"net/http"
	"testing"
	"time"
)

func TestRateLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withLimits(Limits{PerSecond: 0.001, Burst: 2})) // two requests, then nothing for a long time
	want(t, "first", e.join("demo", JoinRequest{}), http.StatusNotFound, CodeRoomNotFound)
	want(t, "second", e.do(http.MethodGet, e.roomPath("demo")+"/characters", "k", nil), http.StatusNotFound, CodeRoomNotFound)
	r := e.join("demo", JoinRequest{})
	want(t, "third", r, http.StatusTooManyRequests, CodeRateLimited)
	if r.errorBody(t).RetryAfter < 1 || r.header.Get("Retry-After") == "" {
		t.Fatalf("rate limited without retryAfter: %s %v", r, r.header)
	}
	want(t, "characters too", e.do(http.MethodGet, e.roomPath("demo")+"/characters", "k", nil), http.StatusTooManyRequests, CodeRateLimited)
}

// TestClientLimiterStaysBounded: a full table drops idle buckets, and
// while none is idle new clients share the overflow bucket.
func TestClientLimiterStaysBounded(t *testing.T) {
	t.Parallel()
	l := newClientLimiter(Limits{PerSecond: 1, Burst: 1, MaxClients: 2})
	now := time.Unix(1000, 0)
	for _, ip := range []string{"10.0.0.1", "10.0.0.2"} {
		if !l.allow(ip, now) {
			t.Fatalf("%s refused its first request", ip)
		}
	}
	if l.allow("10.0.0.1", now) {
		t.Fatal("10.0.0.1 got past its burst")
	}
	if !l.allow("10.0.0.3", now) || l.allow("10.0.0.4", now) {
		t.Fatal("with the table full, new clients must share one overflow bucket")
	}
	if len(l.buckets) != 2 {
		t.Fatalf("%d buckets, want at most 2", len(l.buckets))
	}
	later := now.Add(2 * time.Second) // every bucket refilled: idle
	if !l.allow("10.0.0.5", later) || !l.allow("10.0.0.6", later) {
		t.Fatal("idle buckets were not swept to make room")
	}
	if len(l.buckets) != 2 {
		t.Fatalf("%d buckets, want at most 2", len(l.buckets))
	}
}
