package roomserver

import (
	"net/http"
	"net/netip"
	"sync"
)

// unseatedLimit bounds the connections that have not said hello yet, in
// all and per client (an IPv4 address or an IPv6 /64: clientaddr.Key):
// each holds a goroutine pair and buffers until its hello timeout, and a
// client that never says hello must not be able to hold many.
type unseatedLimit struct {
	mu         sync.Mutex
	max        int
	perAddress int
	total      int
	byAddress  map[netip.Prefix]int
}

func newUnseatedLimit(max, perAddress int) *unseatedLimit {
	return &unseatedLimit{max: max, perAddress: perAddress, byAddress: map[netip.Prefix]int{}}
}

// acquire counts a new connection from address. It returns 0 when the
// connection may proceed, else the HTTP status to refuse it with and why.
func (u *unseatedLimit) acquire(address netip.Prefix) (int, string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	switch {
	case u.byAddress[address] >= u.perAddress:
		return http.StatusTooManyRequests, "too many connections from this address waiting to say hello"
	case u.total >= u.max:
		return http.StatusServiceUnavailable, "too many connections waiting to say hello"
	}
	u.total++
	u.byAddress[address]++
	return 0, ""
}

// release uncounts a connection from address: it said hello, or it ended.
func (u *unseatedLimit) release(address netip.Prefix) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.total--
	if u.byAddress[address]--; u.byAddress[address] <= 0 {
		delete(u.byAddress, address)
	}
}
