package joinapi

import (
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limits bound how often one client IP may call the join API: a token
// bucket per IP, in a table of at most MaxClients buckets.
type Limits struct {
	// PerSecond is the sustained rate per client IP; 10 when zero.
	PerSecond float64
	// Burst is how many requests an idle client may send at once; 20 when zero.
	Burst int
	// MaxClients bounds the table of buckets; 10,000 when zero.
	MaxClients int
}

// DefaultLimits are the limits of a zero Limits.
var DefaultLimits = Limits{PerSecond: 10, Burst: 20, MaxClients: 10_000}

// withDefaults fills the zero fields.
func (l Limits) withDefaults() Limits {
	if l.PerSecond <= 0 {
		l.PerSecond = DefaultLimits.PerSecond
	}
	if l.Burst <= 0 {
		l.Burst = DefaultLimits.Burst
	}
	if l.MaxClients <= 0 {
		l.MaxClients = DefaultLimits.MaxClients
	}
	return l
}

// sweepEvery is the least time between two sweeps of a full table, so a
// flood of new addresses does not make every request walk it.
const sweepEvery = time.Second

// bucket is one client's limiter and when it was last used.
type bucket struct {
	limiter *rate.Limiter
	seen    time.Time
}

// clientLimiter keeps a token bucket per client IP. When its table is full
// it drops the buckets idle long enough to have refilled (forgetting them
// loses nothing); when none has, new clients share one overflow bucket, so
// memory stays bounded even under a flood of addresses.
type clientLimiter struct {
	limits   Limits
	idle     time.Duration // a bucket unused this long is full again
	mu       sync.Mutex
	buckets  map[string]*bucket
	overflow *rate.Limiter
	swept    time.Time
}

func newClientLimiter(l Limits) *clientLimiter {
	l = l.withDefaults()
	return &clientLimiter{
		limits:   l,
		idle:     time.Duration(float64(l.Burst) / l.PerSecond * float64(time.Second)),
		buckets:  map[string]*bucket{},
		overflow: rate.NewLimiter(rate.Limit(l.PerSecond), l.Burst),
	}
}

// allow takes a token from the client's bucket.
func (c *clientLimiter) allow(ip string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.buckets[ip]
	if !ok {
		if len(c.buckets) >= c.limits.MaxClients && !c.sweep(now) {
			return c.overflow.AllowN(now, 1)
		}
		b = &bucket{limiter: rate.NewLimiter(rate.Limit(c.limits.PerSecond), c.limits.Burst)}
		c.buckets[ip] = b
	}
	b.seen = now
	return b.limiter.AllowN(now, 1)
}

// sweep drops the idle buckets and reports whether there is room now.
func (c *clientLimiter) sweep(now time.Time) bool {
	if now.Sub(c.swept) >= sweepEvery {
		c.swept = now
		for ip, b := range c.buckets {
			if now.Sub(b.seen) >= c.idle {
				delete(c.buckets, ip)
			}
		}
	}
	return len(c.buckets) < c.limits.MaxClients
}

// clientIP is the address the request came from. X-Forwarded-For is not
// trusted: any client could set it and get a fresh bucket per request.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
