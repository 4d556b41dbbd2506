package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/playtest"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// soakBot is one player of a soak: a keyed player of one room that plays
// on through drops, crashes and replacements (client.Reconnect).
type soakBot struct {
	index     int
	room      string
	authKey   string
	character string
	rng       *rand.Rand
	c         *client.Client // set once it joined (conn, for other goroutines)
	conn      atomic.Pointer[client.Client]
	err       error // why it stopped playing, if it did
}

// client is the bot's client once it joined, nil before.
func (b *soakBot) client() *client.Client { return b.conn.Load() }

func (s *soak) newBot(i int) *soakBot {
	return &soakBot{index: i, room: s.roomName(i % s.cfg.rooms), authKey: fmt.Sprintf("%s-key-%d", s.cfg.prefix, i),
		rng: rand.New(rand.NewPCG(s.cfg.seed, uint64(i)))}
}

// action is one command a soak player sent and what came of it.
type action struct {
	character, kind, item string
	ok                    bool
	code                  protocol.Code
	latency               time.Duration
}

// ledger records every action of a soak, for the summary and the checks.
type ledger struct {
	mu      sync.Mutex
	actions []action
}

func (l *ledger) record(a action) {
	l.mu.Lock()
	l.actions = append(l.actions, a)
	l.mu.Unlock()
}

func (l *ledger) all() []action {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]action(nil), l.actions...)
}

// actionTimeout bounds one action, walk included.
const actionTimeout = 10 * time.Second

// play joins and acts at its share of the target rate until ctx ends.
func (b *soakBot) play(ctx context.Context, s *soak) {
	if b.err = b.join(ctx, s); b.err != nil {
		return
	}
	every := time.Duration(float64(time.Second) * float64(s.cfg.bots) / s.cfg.rate)
	next := time.Now()
	for ctx.Err() == nil {
		if st := b.c.Snapshot(); st.Closed != nil {
			b.err = fmt.Errorf("gave up reconnecting: %w", st.Closed)
			return
		}
		b.act(ctx, s)
		next = next.Add(every)
		select {
		case <-ctx.Done():
		case <-time.After(time.Until(next)):
		}
	}
}

// join seats the bot through the join API, with a reconnect policy, and
// learns its character's id.
func (b *soakBot) join(ctx context.Context, s *soak) error {
	req := client.JoinRequest{AuthKey: b.authKey}
	resp, err := s.cfg.api.join(ctx, b.room, b.authKey, "")
	if err != nil {
		return fmt.Errorf("joining %s: %w", b.room, err)
	}
	opts := s.cfg.api.clientOptions(protocol.CodecBinary)
	opts.Reconnect = s.cfg.api.api().Reconnect(s.cfg.api.namespace, b.room, req)
	if b.c, err = dialPatiently(ctx, resp.Endpoint, resp.Ticket, opts); err != nil {
		return err
	}
	b.conn.Store(b.c)
	chars, err := s.cfg.api.api().Characters(ctx, s.cfg.api.namespace, b.room, b.authKey)
	if err != nil {
		return fmt.Errorf("listing the characters: %w", err)
	}
	for _, c := range chars {
		if c.Active {
			b.character = c.ID
		}
	}
	return nil
}

// act does one thing: mostly fights and pickups, some drops, now and then
// a walk through the portal.
func (b *soakBot) act(ctx context.Context, s *soak) {
	ctx, cancel := context.WithTimeout(ctx, actionTimeout)
	defer cancel()
	st := b.c.Snapshot()
	switch roll := b.rng.Float64(); {
	case roll < 0.1:
		b.walkThroughPortal(ctx, s)
	case roll < 0.3 && st.Inventory != nil && bagItem(st.Inventory) != "":
		b.send(ctx, s, "inventory.drop", bagItem(st.Inventory), protocol.FeatureInventory, protocol.ActionDrop,
			protocol.InventoryDrop{Item: bagItem(st.Inventory)})
	case roll < 0.6:
		if npc, ok := nearestWhere(st, func(e protocol.EntityState) bool { return e.Kind == protocol.EntityNPC && e.HP > 0 }); ok {
			_ = playtest.WalkTo(ctx, b.c, npc)
			b.send(ctx, s, "combat.attack", "", protocol.FeatureCombat, protocol.ActionAttack, protocol.CombatAttack{Target: npc.ID})
		}
	default:
		if loot, ok := nearestWhere(st, func(e protocol.EntityState) bool { return e.Kind == protocol.EntityLoot }); ok {
			_ = playtest.WalkTo(ctx, b.c, loot)
			b.send(ctx, s, "loot.pickup", "", protocol.FeatureLoot, protocol.ActionPickup, protocol.LootPickup{Entity: loot.ID})
		}
	}
}

// walkThroughPortal takes the portal to the room's other map.
func (b *soakBot) walkThroughPortal(ctx context.Context, s *soak) {
	to := "forest"
	if b.c.Welcome().Map == "forest" {
		to = "town"
	}
	start := time.Now()
	ack, err := playtest.EnterPortal(ctx, b.c, to)
	if err != nil && ack.Seq == 0 {
		return // never sent: the walk failed
	}
	s.record(action{character: b.character, kind: "portal.enter", ok: err == nil && ack.OK, code: ack.Code, latency: time.Since(start)})
}

// send sends one command, waits for its ack and records it (a lost ack
// as no_ack); a pickup's item is the one its ack's inventory gained. A
// command the client could not send (it is reconnecting) is not an action.
func (b *soakBot) send(ctx context.Context, s *soak, kind, item, feature, verb string, payload any) {
	before := b.c.Snapshot().Inventory
	start := time.Now()
	seq, err := b.c.Command(feature, verb, payload)
	if err != nil {
		return // not sent: the client is reconnecting
	}
	ack, err := b.c.AwaitAck(ctx, seq)
	if err != nil {
		ack.Code = "no_ack" // sent, but its answer was lost: it may or may not have happened
	}
	if item == "" && ack.OK {
		item = gained(before, ack.Inventory)
	}
	s.record(action{character: b.character, kind: kind, item: item, ok: ack.OK, code: ack.Code, latency: time.Since(start)})
}

// gained is the item of after that before did not hold, or "".
func gained(before *protocol.Inventory, after []protocol.ItemView) string {
	held := map[string]bool{}
	if before != nil {
		for _, it := range before.Items {
			held[it.ID] = true
		}
	}
	for _, it := range after {
		if !held[it.ID] {
			return it.ID
		}
	}
	return ""
}

// bagItem is an item in the bag (not worn), or "".
func bagItem(inv *protocol.Inventory) string {
	for _, it := range inv.Items {
		if it.Slot == "" {
			return it.ID
		}
	}
	return ""
}
