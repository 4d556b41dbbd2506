package roomserver

import (
	"context"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/playtest"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/token"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// TestResumeOnTheReplacementPodAfterACrash: a map pod dies without a
// goodbye; its replacement (same map, same database and keys) takes the
// player back with its resume token, from the last checkpoint and with
// every acknowledged pickup, and the token is spent on every pod after.
func TestResumeOnTheReplacementPodAfterACrash(t *testing.T) {
	db, _ := newDB(t)
	keys := newKeys(t)
	first := persistentHarness(t, db, keys, nil)
	waitReady(t, first)
	c := first.join(character("rita"))
	loot := nearestLoot(t, c)
	walkTo(t, c, loot)
	ack := pickup(t, c, loot)
	if !ack.OK {
		t.Fatalf("pickup: %+v", ack)
	}
	moved := walk(t, c, 0, 1, 6)
	waitSaved(t, db, "rita", moved.Self)
	spent := c.Welcome().ResumeToken
	first.crash()

	second := persistentHarness(t, db, keys, nil)
	waitReady(t, second)
	r := second.dial(protocol.Hello{Resume: spent, LastSeq: 9, LastEvent: moved.LastEventID()}, client.Options{})
	w := r.Welcome()
	if !w.Resumed || w.LastSeq != 0 || !playtest.SameItems(w.Inventory, ack.Inventory) {
		t.Fatalf("welcome on the replacement: resumed %v, lastSeq %d, inventory %+v; want resumed, 0 and %+v",
			w.Resumed, w.LastSeq, w.Inventory, ack.Inventory)
	}
	s := waitFor(t, r, "rita in sight", func(s client.State) bool { return s.Sees(w.PlayerID) })
	if dist(s.Self, moved.Self) > 0.01 {
		t.Errorf("rita resumed at (%v,%v), saved at (%v,%v)", s.Self.X, s.Self.Y, moved.Self.X, moved.Self.Y)
	}
	drop := command(t, r, protocol.FeatureInventory, protocol.ActionDrop, protocol.InventoryDrop{Item: ack.Inventory[0].ID})
	if !drop.OK {
		t.Fatalf("a drop after the resume: %+v", drop)
	}
	second.refused(protocol.Hello{Resume: spent}, protocol.CodeTokenReplayed)
	next := w.ResumeToken
	second.crash()

	third := persistentHarness(t, db, keys, nil)
	waitReady(t, third)
	third.refused(protocol.Hello{Resume: spent}, protocol.CodeTokenReplayed)
	again := third.dial(protocol.Hello{Resume: next}, client.Options{})
	if !again.Welcome().Resumed || len(again.Welcome().Inventory) != 0 {
		t.Fatalf("second resume: %+v, want resumed with the item dropped", again.Welcome())
	}
}

// TestResumeOnTheReplacementPodAfterADrain: a pod that shuts down saves
// everyone and says goodbye; its replacement resumes them where they were.
func TestResumeOnTheReplacementPodAfterADrain(t *testing.T) {
	db, _ := newDB(t)
	keys := newKeys(t)
	first := persistentHarness(t, db, keys, func(c *Config) { c.CheckpointInterval = time.Hour })
	waitReady(t, first)
	c := first.join(character("dana"))
	moved := walk(t, c, 1, 0, 8)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := first.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, c, "the goodbye", func(s client.State) bool { return s.Closed != nil })

	second := persistentHarness(t, db, keys, nil)
	waitReady(t, second)
	r := second.dial(protocol.Hello{Resume: c.Welcome().ResumeToken}, client.Options{})
	s := waitFor(t, r, "dana in sight", func(s client.State) bool { return s.Sees(r.Welcome().PlayerID) })
	if !r.Welcome().Resumed || dist(s.Self, moved.Self) > 0.01 {
		t.Errorf("resumed %v at (%v,%v), left at (%v,%v)", r.Welcome().Resumed, s.Self.X, s.Self.Y, moved.Self.X, moved.Self.Y)
	}
}

// TestAResumeTokenOfAReplacedSessionIsRefused: once the character joined
// again with a ticket, the tokens of its earlier session are refused, on
// the pod that seated it and (the lease epoch moved on) on a replacement.
func TestAResumeTokenOfAReplacedSessionIsRefused(t *testing.T) {
	db, _ := newDB(t)
	keys := newKeys(t)
	first := persistentHarness(t, db, keys, nil)
	waitReady(t, first)
	old := first.join(character("omar")).Welcome().ResumeToken
	first.join(character("omar"))
	first.refused(protocol.Hello{Resume: old}, protocol.CodeTokenReplayed)
	first.crash()

	second := persistentHarness(t, db, keys, nil)
	waitReady(t, second)
	second.refused(protocol.Hello{Resume: old}, protocol.CodeTokenReplayed)
}

// TestForeignResumeTokensAreRefused: a resume token of another map,
// another room, another key, a ticket where a resume token belongs, and
// an expired token are each refused with their code.
func TestForeignResumeTokensAreRefused(t *testing.T) {
	db, _ := newDB(t)
	h := persistentHarness(t, db, nil, nil)
	waitReady(t, h)
	h.join(character("fay"))
	sign := func(signer *token.Signer, edit func(*token.Claims), ttl time.Duration) string {
		c := token.Claims{Type: token.TypeResume, Subject: "user-fay", Character: "fay", Room: "demo", Map: h.cfg.Instance, Session: "s"}
		edit(&c)
		raw, _, err := signer.Sign(c, ttl)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	same := func(*token.Claims) {}
	other := token.NewSigner(newKeys(t), time.Now)
	cases := map[string]struct {
		raw  string
		code protocol.Code
	}{
		"another map":    {sign(h.signer, func(c *token.Claims) { c.Map = "demo-crypt" }, time.Minute), protocol.CodeWrongMap},
		"another room":   {sign(h.signer, func(c *token.Claims) { c.Room = "other" }, time.Minute), protocol.CodeUnauthorized},
		"another key":    {sign(other, same, 20*time.Second), protocol.CodeUnauthorized},
		"a join ticket":  {h.ticket(character("fay")), protocol.CodeUnauthorized},
		"too long-lived": {sign(h.signer, same, time.Hour), protocol.CodeUnauthorized},
		"another seat":   {sign(h.signer, same, 20*time.Second), protocol.CodeTokenReplayed},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) { h.refused(protocol.Hello{Resume: tc.raw}, tc.code) })
	}
	expired := sign(h.signer, same, time.Second)
	h.now.Add(int64(time.Second + token.DefaultLeeway + time.Second))
	h.refused(protocol.Hello{Resume: expired}, protocol.CodeTokenExpired)
}

// TestResumeTokensAreRefreshed: an attached client gets a new resume
// token every third of its grace, and the newest works.
func TestResumeTokensAreRefreshed(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.ResumeGrace, c.GuestResumeGrace = 3*time.Second, 3*time.Second })
	c := h.join()
	s := waitFor(t, c, "a session message", func(s client.State) bool { return s.ResumeToken != c.Welcome().ResumeToken })
	if err := c.Drop(); err != nil {
		t.Fatal(err)
	}
	r := h.dial(protocol.Hello{Resume: s.ResumeToken}, client.Options{})
	if !r.Welcome().Resumed || r.Welcome().PlayerID != c.Welcome().PlayerID {
		t.Fatalf("resume with the refreshed token: %+v", r.Welcome())
	}
}
