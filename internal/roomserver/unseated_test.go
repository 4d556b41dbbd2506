package roomserver

import (
	"net/http"
	"testing"

	"github.com/roomkeeper/roomkeeper/internal/clientaddr"
)

// TestUnseatedConnectionsAreCappedPerClient: the per-client cap counts an
// IPv6 /64 as one client (an attacker who has one address has them all),
// IPv4 addresses one by one, and the server-wide cap all of them.
func TestUnseatedConnectionsAreCappedPerClient(t *testing.T) {
	u := newUnseatedLimit(5, 2)
	from := func(remote string) int {
		code, _ := u.acquire(clientaddr.Key(remote))
		return code
	}
	for i, c := range []struct {
		remote string
		want   int
	}{
		{"[2001:db8:0:1::1]:1000", 0},
		{"[2001:db8:0:1::2]:1000", 0},
		{"[2001:db8:0:1:ffff::3]:1000", http.StatusTooManyRequests}, // the same /64, at its cap
		{"[2001:db8:0:2::1]:1000", 0},                               // another /64
		{"192.0.2.1:1000", 0},
		{"192.0.2.2:1000", 0},
		{"192.0.2.3:1000", http.StatusServiceUnavailable}, // five in all
	} {
		if got := from(c.remote); got != c.want {
			t.Errorf("connection %d from %s: %d, want %d", i, c.remote, got, c.want)
		}
	}
	u.release(clientaddr.Key("[2001:db8:0:1::2]:1000"))
	if got := from("[2001:db8:0:1::7]:1000"); got != 0 {
		t.Errorf("after a release the /64 is still refused: %d", got)
	}
}
