package main

import (
	"context"
	"net"

	"github.com/roomkeeper/roomkeeper/internal/joinflags"
)

// playerAddress is soak player i's own source address on loopback,
// 127.1.x.y: real players come from addresses of their own, and the join
// API and the maps limit each address (a hundred players behind one
// address are a flood to them). The party flood's guests share one
// address on purpose and do not use it.
func playerAddress(i int) net.IP {
	return net.IPv4(127, 1, byte(i/250), byte(i%250+1))
}

// fromAddress dials from source when the destination is on loopback (make
// dev's join API and pods), and as usual elsewhere (a real cluster's
// addresses, which a loopback source cannot reach).
func fromAddress(source net.IP) func(ctx context.Context, network, addr string) (net.Conn, error) {
	own := &net.Dialer{LocalAddr: &net.TCPAddr{IP: source}}
	var usual net.Dialer
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if host, _, err := net.SplitHostPort(addr); err == nil {
			if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() && ip.To4() != nil {
				return own.DialContext(ctx, network, addr)
			}
		}
		return usual.DialContext(ctx, network, addr)
	}
}

// playerFlags are flags whose join API client and map connections dial
// from source.
func playerFlags(flags joinflags.Flags, source net.IP) joinflags.Flags {
	flags.Dial = fromAddress(source)
	return flags
}
