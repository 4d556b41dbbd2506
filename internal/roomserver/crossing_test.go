package roomserver

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/playtest"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// TestACrossingWhoseWelcomeWasLostJoinsAgain: the destination took the
// player, but its welcome never reached the client (on a saturated node
// the client's handshake timed out; here a gateway drops the connection).
// The retry finds the ticket spent and the map it left finds the transfer
// over, so no ticket of the transfer admits it: the client joins again
// and plays on with what it carries.
func TestACrossingWhoseWelcomeWasLostJoinsAgain(t *testing.T) {
	w := newWorld(t, func(c *Config) { c.ResumeGrace = time.Second })
	w.dir["crypt"] = Destination{Map: "crypt", Instance: "demo-crypt", Endpoint: loseFirstWelcome(t, w.crypt.url)}
	rejoin := func(context.Context) (string, string, error) {
		return w.town.url, w.town.ticket(character("bob")), nil
	}
	bob := w.town.dial(protocol.Hello{Ticket: w.town.ticket(character("bob"))},
		client.Options{Reconnect: &client.Reconnect{Rejoin: rejoin, MaxDelay: 200 * time.Millisecond}})
	loot := nearestLoot(t, bob)
	walkTo(t, bob, loot)
	carried := pickup(t, bob, loot)
	if !carried.OK {
		t.Fatalf("pickup: %+v", carried)
	}
	portal, _ := playtest.PortalTo(bob, "crypt")
	walkTo(t, bob, protocol.EntityState{X: portal.X, Y: portal.Y})
	if ack := command(t, bob, protocol.FeaturePortal, protocol.ActionEnter, protocol.PortalEnter{Portal: portal.Entity}); !ack.OK {
		t.Fatalf("portal.enter: %+v", ack)
	}
	s := waitFor(t, bob, "bob back by a new join", func(s client.State) bool { return s.Rejoins > 0 || s.Closed != nil })
	if s.Closed != nil {
		t.Fatalf("the client gave up: %v", s.Closed)
	}
	welcome := bob.Welcome()
	if welcome.Map != "town" || len(welcome.Inventory) != 1 || welcome.Inventory[0] != carried.Inventory[0] {
		t.Fatalf("after joining again: on %q with %+v, want the town with %+v", welcome.Map, welcome.Inventory, carried.Inventory)
	}
}

// loseFirstWelcome is a gateway in front of the room server at backend
// that drops its first connection once the server has answered the
// hello, so that answer never arrives; later connections pass.
func loseFirstWelcome(t *testing.T, backend string) string {
	u, err := url.Parse(backend)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	var first atomic.Bool
	first.Store(true)
	backendHost := u.Host
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go relay(conn, backendHost, first.Swap(false))
		}
	}()
	u.Host = ln.Addr().String()
	return u.String()
}

// relay carries conn to backend and back; loseAnswer cuts it after the
// WebSocket upgrade, as soon as the server says anything more.
func relay(conn net.Conn, backend string, loseAnswer bool) {
	defer func() { _ = conn.Close() }()
	up, err := net.Dial("tcp", backend)
	if err != nil {
		return
	}
	defer func() { _ = up.Close() }()
	go func() { _, _ = io.Copy(up, conn) }()
	if !loseAnswer {
		_, _ = io.Copy(conn, up)
		return
	}
	answer := bufio.NewReader(up)
	for { // the upgrade's status line and headers, to the empty line
		line, err := answer.ReadString('\n')
		if err != nil {
			return
		}
		if _, err := io.WriteString(conn, line); err != nil || line == "\r\n" {
			break
		}
	}
	_, _ = answer.ReadByte() // the server answered the hello: drop it
}
