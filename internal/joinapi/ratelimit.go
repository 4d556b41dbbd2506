package joinapi

import (
	"container/heap"
	"math"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/clientaddr"
)

// Limits bound how often one client may call the join API: a token bucket
// per client (an IPv4 address, or an IPv6 /64), in a table of at most
// MaxClients buckets.
type Limits struct {
	// PerSecond is the sustained rate per client; 10 when zero.
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

// clientKey is whom a request counts against (clientaddr.Key): its IPv4
// address, or the /64 its IPv6 address is in; an IPv4-mapped IPv6 address
// is its IPv4 address. X-Forwarded-For is not trusted: any client could
// set it and get a fresh bucket per request.
func clientKey(r *http.Request) netip.Prefix {
	return clientaddr.Key(r.RemoteAddr)
}

// clientLimiter keeps a token bucket per client, each kept as the time it
// will be full again (GCRA): a request costs one period (1/PerSecond) and
// moves that time on; a request that would move it more than Burst periods
// past now is refused and costs nothing.
//
// The table holds at most MaxClients buckets, and only buckets that are
// not full: a full bucket is the same as none, so it is dropped. When the
// table is full and a new client comes, the fullest bucket (the one full
// again soonest) makes room. So a newcomer always gets a bucket of its own,
// whatever a flood of addresses does to the table, and the bucket given up
// is the one whose client lost least: the least busy. A client that keeps
// its bucket drained, over its rate, is the last to be forgotten.
type clientLimiter struct {
	period time.Duration // one request's cost
	burst  time.Duration // how far past now a bucket may be drawn: Burst periods
	max    int

	mu      sync.Mutex
	clients map[netip.Prefix]*clientBucket
	byFull  bucketHeap
}

// clientBucket is one client's bucket.
type clientBucket struct {
	key netip.Prefix
	// full is when the bucket is full again; its tokens now are
	// Burst - (full - now) / period.
	full  time.Time
	index int // in clientLimiter.byFull
}

func newClientLimiter(l Limits) *clientLimiter {
	l = l.withDefaults()
	period := time.Duration(float64(time.Second) / l.PerSecond)
	return &clientLimiter{
		period:  period,
		burst:   time.Duration(l.Burst) * period,
		max:     l.MaxClients,
		clients: make(map[netip.Prefix]*clientBucket),
	}
}

// allow takes a token from the client's bucket. When there is none it
// says how long until there is.
func (c *clientLimiter) allow(key netip.Prefix, now time.Time) (ok bool, wait time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropFull(now)
	b, ok := c.clients[key]
	if !ok {
		if len(c.clients) >= c.max {
			delete(c.clients, heap.Pop(&c.byFull).(*clientBucket).key)
		}
		b = &clientBucket{key: key, full: now}
		c.clients[key] = b
		heap.Push(&c.byFull, b)
	}
	next := b.full
	if next.Before(now) {
		next = now
	}
	next = next.Add(c.period)
	if over := next.Sub(now) - c.burst; over > 0 {
		return false, over
	}
	b.full = next
	heap.Fix(&c.byFull, b.index)
	return true, 0
}

// dropFull forgets the buckets that are full by now.
func (c *clientLimiter) dropFull(now time.Time) {
	for len(c.byFull) > 0 && !c.byFull[0].full.After(now) {
		delete(c.clients, heap.Pop(&c.byFull).(*clientBucket).key)
	}
}

// size is how many buckets the table holds.
func (c *clientLimiter) size() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.clients)
}

// retrySeconds is wait in whole seconds, rounded up, for Retry-After.
func retrySeconds(wait time.Duration) int {
	return int(math.Ceil(wait.Seconds()))
}

// bucketHeap orders buckets by when they are full, soonest first.
type bucketHeap []*clientBucket

func (h bucketHeap) Len() int           { return len(h) }
func (h bucketHeap) Less(i, j int) bool { return h[i].full.Before(h[j].full) }
func (h bucketHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}

func (h *bucketHeap) Push(x any) {
	b := x.(*clientBucket)
	b.index = len(*h)
	*h = append(*h, b)
}

func (h *bucketHeap) Pop() any {
	old := *h
	b := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return b
}
