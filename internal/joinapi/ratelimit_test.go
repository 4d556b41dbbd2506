package joinapi

import (
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
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
	// The next token comes 1000 s after the first request, less the time
	// the three requests took.
	if b := r.errorBody(t); b.RetryAfter < 900 || b.RetryAfter > 1000 || r.header.Get("Retry-After") != strconv.Itoa(b.RetryAfter) {
		t.Fatalf("rate limited: retryAfter %d, Retry-After %q; want about 1000 (one request per 1000 s)", b.RetryAfter, r.header.Get("Retry-After"))
	}
	want(t, "characters too", e.do(http.MethodGet, e.roomPath("demo")+"/characters", "k", nil), http.StatusTooManyRequests, CodeRateLimited)
}

// keyOf is the client key of a request from addr.
func keyOf(addr string) netip.Prefix {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = addr
	return clientKey(r)
}

// randomIn is a random address in prefix p (whole bytes of prefix).
func randomIn(r *rand.Rand, p netip.Prefix) netip.Addr {
	if p.Addr().Is4() {
		b := p.Addr().As4()
		for i := p.Bits() / 8; i < 4; i++ {
			b[i] = byte(r.Uint32())
		}
		return netip.AddrFrom4(b)
	}
	b := p.Addr().As16()
	for i := p.Bits() / 8; i < 16; i++ {
		b[i] = byte(r.Uint32())
	}
	return netip.AddrFrom16(b)
}

// TestClientKey: an IPv4 address is a client, an IPv6 /64 is a client
// whatever its last 64 bits, and an IPv4-mapped IPv6 address is its IPv4
// address.
func TestClientKey(t *testing.T) {
	t.Parallel()
	for addr, key := range map[string]string{
		"192.0.2.1:1234":                       "192.0.2.1/32",
		"[::ffff:192.0.2.1]:1234":              "192.0.2.1/32",
		"[2001:db8:1:2:3:4:5:6]:443":           "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff:ffff:ffff:ffff]:1": "2001:db8:1:2::/64",
		"[fe80::1%eth0]:80":                    "fe80::/64",
		"[::1]:80":                             "::/64",
	} {
		if got := keyOf(addr); got.String() != key {
			t.Errorf("key of %s = %s, want %s", addr, got, key)
		}
	}
	if got := keyOf("@"); got != (netip.Prefix{}) {
		t.Errorf("key of a Unix socket's address = %s, want the zero Prefix", got)
	}
	r := rand.New(rand.NewPCG(1, 64))
	net64 := netip.MustParsePrefix("2001:db8:aa:bb::/64")
	for range 1000 {
		a, b := randomIn(r, net64), randomIn(r, net64)
		ka, kb := keyOf(netip.AddrPortFrom(a, 1).String()), keyOf(netip.AddrPortFrom(b, 2).String())
		if ka != kb || ka != net64 {
			t.Fatalf("%s and %s are keyed %s and %s, want both %s", a, b, ka, kb, net64)
		}
		v4 := randomIn(r, netip.MustParsePrefix("10.0.0.0/8"))
		mapped := netip.AddrFrom16(v4.As16())
		if k4, km := keyOf(netip.AddrPortFrom(v4, 1).String()), keyOf(netip.AddrPortFrom(mapped, 1).String()); k4 != km || k4.Bits() != 32 {
			t.Fatalf("%s is keyed %s, %s %s; want one /32", v4, k4, mapped, km)
		}
	}
}

// TestClientLimiterPerSlashSixtyFour: the addresses of one IPv6 /64 share
// one bucket, however many of them a client uses; another /64 and each
// IPv4 address have their own.
func TestClientLimiterPerSlashSixtyFour(t *testing.T) {
	t.Parallel()
	l := newClientLimiter(Limits{PerSecond: 1, Burst: 5})
	now := time.Unix(1000, 0)
	r := rand.New(rand.NewPCG(6, 4))
	attacker := netip.MustParsePrefix("2001:db8:bad:1::/64")
	allowed := 0
	for range 1000 {
		addr := netip.AddrPortFrom(randomIn(r, attacker), 443).String()
		if ok, _ := l.allow(keyOf(addr), now); ok {
			allowed++
		}
	}
	if allowed != 5 {
		t.Fatalf("1,000 addresses of one /64 got %d requests through, want the burst of 5", allowed)
	}
	for _, other := range []string{"[2001:db8:bad:2::1]:443", "192.0.2.1:80", "192.0.2.2:80"} {
		if ok, _ := l.allow(keyOf(other), now); !ok {
			t.Fatalf("%s was refused: the /64 next door drained its bucket", other)
		}
	}
	ok1, _ := l.allow(keyOf("[::ffff:192.0.2.1]:80"), now)
	for range 3 {
		l.allow(keyOf("192.0.2.1:80"), now)
	}
	if ok, _ := l.allow(keyOf("[::ffff:192.0.2.1]:81"), now); !ok1 || ok {
		t.Fatal("192.0.2.1 and ::ffff:192.0.2.1 are not one client")
	}
}

// TestClientLimiterRefills: a bucket gives Burst requests at once, then
// PerSecond; a refused request says how long to wait; a full bucket is
// forgotten.
func TestClientLimiterRefills(t *testing.T) {
	t.Parallel()
	l := newClientLimiter(Limits{PerSecond: 4, Burst: 3})
	key := keyOf("192.0.2.7:1")
	now := time.Unix(1000, 0)
	for i := range 3 {
		if ok, _ := l.allow(key, now); !ok {
			t.Fatalf("request %d of the burst refused", i+1)
		}
	}
	ok, wait := l.allow(key, now)
	if ok || wait != 250*time.Millisecond {
		t.Fatalf("fourth request: allowed %v, wait %v; want refused for 250ms", ok, wait)
	}
	if ok, _ := l.allow(key, now.Add(wait-time.Nanosecond)); ok {
		t.Fatal("allowed before its wait was over")
	}
	if ok, _ := l.allow(key, now.Add(wait)); !ok {
		t.Fatal("refused once its wait was over")
	}
	if l.size() != 1 {
		t.Fatalf("%d buckets, want 1", l.size())
	}
	l.allow(keyOf("192.0.2.8:1"), now.Add(time.Second)) // 192.0.2.7 is full again by then
	if l.size() != 1 {
		t.Fatalf("%d buckets after 192.0.2.7's refilled, want only 192.0.2.8's", l.size())
	}
}

// TestClientLimiterFloodLeavesNewcomersTheirBurst: 12,000 addresses keep
// the table (10,000 buckets) full, every one of them busy, for seconds.
// Every newcomer still gets its whole burst at once, then is limited like
// anyone; a client that stays over its rate through the flood still gets
// no more than its rate; and the table never holds more than MaxClients.
func TestClientLimiterFloodLeavesNewcomersTheirBurst(t *testing.T) {
	t.Parallel()
	limits := DefaultLimits
	l := newClientLimiter(Limits{})
	start := time.Unix(1000, 0)
	flood := make([]netip.Prefix, 12_000)
	for i := range flood {
		flood[i] = netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), 32)
	}
	heavy := netip.MustParsePrefix("2001:db8:ffff:1::/64")
	allow := func(key netip.Prefix, now time.Time) bool {
		ok, _ := l.allow(key, now)
		if n := len(l.clients); n > limits.MaxClients || n != len(l.byFull) {
			t.Fatalf("%d buckets, %d in the heap; at most %d allowed", n, len(l.byFull), limits.MaxClients)
		}
		return ok
	}

	const ticks = 30 // 100 ms each
	tick := 100 * time.Millisecond
	newcomers, heavyAllowed := 0, 0
	for k := range ticks {
		now := start.Add(time.Duration(k) * tick)
		for i, key := range flood {
			if k == 0 { // each drains its bucket first ...
				for range limits.Burst + 5 {
					allow(key, now)
				}
			} else { // ... then sends at its full rate, so none is ever idle
				allow(key, now)
			}
			if i%1000 != 0 {
				continue
			}
			for range 4 { // twice its rate
				if allow(heavy, now) {
					heavyAllowed++
				}
			}
			newcomer := netip.PrefixFrom(netip.AddrFrom4([4]byte{192, 0, byte(k), byte(i / 1000)}), 32)
			newcomers++
			for n := range limits.Burst {
				if !allow(newcomer, now) {
					t.Fatalf("tick %d: newcomer %s refused on its request %d of %d", k, newcomer, n+1, limits.Burst)
				}
			}
			if allow(newcomer, now) {
				t.Fatalf("tick %d: newcomer %s got past its burst", k, newcomer)
			}
		}
	}
	if newcomers < 300 {
		t.Fatalf("only %d newcomers: the test proves little", newcomers)
	}
	elapsed := time.Duration(ticks-1) * tick
	if most := limits.Burst + int(limits.PerSecond*elapsed.Seconds()) + 1; heavyAllowed > most {
		t.Fatalf("a client at twice its rate got %d requests through in %v, want at most %d", heavyAllowed, elapsed, most)
	}
	if heavyAllowed < limits.Burst {
		t.Fatalf("the heavy client got only %d requests through", heavyAllowed)
	}
}
