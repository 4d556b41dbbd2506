// Package clientaddr says whom a network request counts against, for the
// limits per client of the join API and the room server.
package clientaddr

import "net/netip"

// ipv6ClientBits is how much of an IPv6 address names one client: a /64
// is one subscriber's or one LAN's (RFC 6177), and whoever has one
// address in it can use all 2^64, so each address is not a client.
const ipv6ClientBits = 64

// Key is whom a connection from remoteAddr (host:port, as in
// http.Request.RemoteAddr) counts against: its IPv4 address, or the /64
// its IPv6 address is in. An IPv4 address mapped into IPv6
// (::ffff:192.0.2.1, as a dual-stack listener reports it) is that IPv4
// address. X-Forwarded-For is not for the caller to trust: any client
// could set it and count as someone new each time. A connection without
// an IP address (a Unix socket) counts against the zero Prefix, which all
// such share.
func Key(remoteAddr string) netip.Prefix {
	ap, err := netip.ParseAddrPort(remoteAddr)
	if err != nil {
		return netip.Prefix{}
	}
	addr := ap.Addr().Unmap().WithZone("")
	bits := addr.BitLen()
	if addr.Is6() {
		bits = ipv6ClientBits
	}
	key, err := addr.Prefix(bits)
	if err != nil {
		return netip.Prefix{}
	}
	return key
}
