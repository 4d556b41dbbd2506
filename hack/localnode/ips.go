package main

import (
	"errors"
	"net/netip"
	"strconv"
	"sync"
)

// The host part of pod addresses: PREFIX2 to PREFIX254.
const (
	firstHost = 2
	lastHost  = 254
)

// errNoAddress says every pod address is in use.
var errNoAddress = errors.New("no free pod address")

// ipPool hands out loopback addresses, lowest free first, and takes them back
// when pods are deleted. It is safe for concurrent use.
type ipPool struct {
	prefix string
	mu     sync.Mutex
	used   map[int]bool
}

func newIPPool(prefix string) *ipPool {
	return &ipPool{prefix: prefix, used: map[int]bool{}}
}

// validPrefix reports whether prefix plus a host number is an IPv4 address.
func validPrefix(prefix string) bool {
	_, err := netip.ParseAddr(prefix + "1")
	return err == nil && len(prefix) > 0 && prefix[len(prefix)-1] == '.'
}

// allocate returns a free address.
func (p *ipPool) allocate() (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for host := firstHost; host <= lastHost; host++ {
		if !p.used[host] {
			p.used[host] = true
			return p.prefix + strconv.Itoa(host), nil
		}
	}
	return "", errNoAddress
}

// release makes ip free again. Addresses not from this pool are ignored.
func (p *ipPool) release(ip string) {
	host, err := strconv.Atoi(ip[min(len(p.prefix), len(ip)):])
	if err != nil || ip[:min(len(p.prefix), len(ip))] != p.prefix {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.used, host)
}
