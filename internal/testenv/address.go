package testenv

import (
	"fmt"
	"net"
	"testing"
)

// FreeAddress is a 127.0.0.1 address nothing listens on right now, for a
// server a test starts. Another process may take it first; the server's
// start then fails and says so.
func FreeAddress() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// MustFreeAddress is FreeAddress for a test, which fails when there is none.
func MustFreeAddress(t testing.TB) string {
	t.Helper()
	addr, err := FreeAddress()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}
