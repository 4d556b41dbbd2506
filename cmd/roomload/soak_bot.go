package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/content"
	"github.com/roomkeeper/roomkeeper/internal/joinflags"
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
	// acked is the inventory of the newest ok critical ack: the inventory
	// channel may not show it yet.
	acked []protocol.ItemView
}

// client is the bot's client once it joined, nil before.
func (b *soakBot) client() *client.Client { return b.conn.Load() }

func (s *soak) newBot(i int) *soakBot {
	return &soakBot{index: i, room: s.roomName(i % s.cfg.rooms), authKey: fmt.Sprintf("%s-key-%d", s.cfg.prefix, i),
		rng: rand.New(rand.NewPCG(s.cfg.seed, uint64(i)))}
}

// Action kinds: the critical ones are named as their critical_events
// rows are.
const (
	kindPickup  = "loot.pickup"
	kindDrop    = "inventory.drop"
	kindEquip   = "inventory.equip"
	kindUnequip = "inventory.unequip"
	kindAttack  = "combat.attack"
	kindPortal  = "portal.enter"
)

// codeNoAck marks a command sent whose ack never came (the connection
// dropped under it): it may or may not have happened.
const codeNoAck protocol.Code = "no_ack"

// action is one command a soak player sent and what came of it.
type action struct {
	character, kind, item string
	ok                    bool
	code                  protocol.Code
	// sent is when the command went out; latency how long its ack took.
	sent    time.Time
	latency time.Duration
}

// ledger records every action of a soak, for the summary and the checks.
type ledger struct {
	mu      sync.Mutex
	actions []action
	// unsent counts the commands the client could not write (it was
	// reconnecting): never sent, so no action.
	unsent int
}

func (l *ledger) record(a action) {
	l.mu.Lock()
	l.actions = append(l.actions, a)
	l.mu.Unlock()
}

func (l *ledger) notSent() {
	l.mu.Lock()
	l.unsent++
	l.mu.Unlock()
}

func (l *ledger) all() ([]action, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]action(nil), l.actions...), l.unsent
}

// actionTimeout bounds one action, walk included.
const actionTimeout = 10 * time.Second

// pacer spaces one bot's actions every `every`. A bot that fell behind
// (a long walk, a map that was down) starts the schedule afresh instead
// of catching up in a burst.
type pacer struct {
	every time.Duration
	next  time.Time
}

// newPacer paces every `every`, the first action at now+offset (bots
// start spread over one interval, not all at once).
func newPacer(every, offset time.Duration, now time.Time) *pacer {
	return &pacer{every: every, next: now.Add(offset)}
}

// wait is how long to wait at now before the next action, which it
// books.
func (p *pacer) wait(now time.Time) time.Duration {
	if now.Sub(p.next) > p.every {
		p.next = now // behind by more than one action: forget the backlog
	}
	d := max(p.next.Sub(now), 0)
	p.next = p.next.Add(p.every)
	return d
}

// play joins and acts at its share of the target rate until ctx ends.
func (b *soakBot) play(ctx context.Context, s *soak) {
	if b.err = b.join(ctx, s); b.err != nil {
		return
	}
	every := time.Duration(float64(time.Second) * float64(s.cfg.bots) / s.cfg.rate)
	pace := newPacer(every, time.Duration(b.rng.Int64N(int64(every)+1)), time.Now())
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(pace.wait(time.Now())):
		}
		if ctx.Err() != nil {
			return
		}
		if st := b.c.Snapshot(); st.Closed != nil {
			b.err = fmt.Errorf("gave up reconnecting: %w", st.Closed)
			return
		}
		b.act(ctx, s)
	}
}

// join seats the bot through the join API, with a reconnect policy, and
// learns its character's id. A try refused for the moment (a busy map or
// join API, the database away) is made again, as a player's client does
// (client.Connect); the report counts those tries.
func (b *soakBot) join(ctx context.Context, s *soak) error {
	flags := playerFlags(s.cfg.api, playerAddress(b.index))
	api, opts := flags.API(), flags.ClientOptions(protocol.CodecBinary)
	opts.Reconnect = api.Reconnect(s.cfg.api.Namespace, b.room, client.JoinRequest{AuthKey: b.authKey})
	var err error
	if b.c, err = client.Connect(ctx, opts); err != nil {
		return fmt.Errorf("joining %s: %w", b.room, err)
	}
	b.conn.Store(b.c)
	chars, err := joinflags.Patiently(ctx, func() ([]client.Character, error) {
		return api.Characters(ctx, s.cfg.api.Namespace, b.room, b.authKey)
	})
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

// act does one thing: mostly fights and pickups, some drops, equipment
// changes, now and then a walk through the portal. When what it picked is
// not possible (nothing in sight, nothing to drop) it fights or picks up
// instead, and failing that takes the portal, so that nearly every turn
// is an action.
func (b *soakBot) act(ctx context.Context, s *soak) {
	ctx, cancel := context.WithTimeout(ctx, actionTimeout)
	defer cancel()
	st := b.c.Snapshot()
	roll := b.rng.Float64()
	switch {
	case roll < 0.08:
		b.walkThroughPortal(ctx, s)
		return
	case roll < 0.2 && b.drop(ctx, s, st):
		return
	case roll < 0.3 && b.changeEquipment(ctx, s, st):
		return
	case roll < 0.6 && b.attack(ctx, s, st):
		return
	}
	if !b.pickUp(ctx, s, st) && !b.attack(ctx, s, st) {
		b.walkThroughPortal(ctx, s)
	}
}

// attack walks to the nearest living NPC and attacks it.
func (b *soakBot) attack(ctx context.Context, s *soak, st client.State) bool {
	npc, ok := playtest.Nearest(st, func(e protocol.EntityState) bool { return e.Kind == protocol.EntityNPC && e.HP > 0 })
	if ok {
		_ = playtest.WalkTo(ctx, b.c, npc) // a failed walk (reconnecting) still tries: the refusal is counted
		b.send(ctx, s, kindAttack, "", protocol.FeatureCombat, protocol.ActionAttack, protocol.CombatAttack{Target: npc.ID})
	}
	return ok
}

// pickUp walks to the nearest loot and picks it up.
func (b *soakBot) pickUp(ctx context.Context, s *soak, st client.State) bool {
	loot, ok := playtest.Nearest(st, func(e protocol.EntityState) bool { return e.Kind == protocol.EntityLoot })
	if ok {
		_ = playtest.WalkTo(ctx, b.c, loot)
		b.send(ctx, s, kindPickup, "", protocol.FeatureLoot, protocol.ActionPickup, protocol.LootPickup{Entity: loot.ID})
	}
	return ok
}

// drop drops an item of the bag, if it has one.
func (b *soakBot) drop(ctx context.Context, s *soak, st client.State) bool {
	item := bagItem(st.Inventory)
	if item == "" {
		return false
	}
	b.send(ctx, s, kindDrop, item, protocol.FeatureInventory, protocol.ActionDrop, protocol.InventoryDrop{Item: item})
	return true
}

// changeEquipment takes off a worn item, or wears one of the bag that
// the map's content lets it wear.
func (b *soakBot) changeEquipment(ctx context.Context, s *soak, st client.State) bool {
	if st.Inventory == nil {
		return false
	}
	for _, it := range st.Inventory.Items {
		if it.Slot != "" && b.rng.IntN(2) == 0 {
			b.send(ctx, s, kindUnequip, it.ID, protocol.FeatureInventory, protocol.ActionUnequip, protocol.InventoryUnequip{Slot: it.Slot})
			return true
		}
	}
	static := b.c.Static()
	pack := content.ForMap(static.Config.Content, static.Config.Biome)
	item, slot := wearable(&pack, st.Inventory)
	if item == "" {
		return false
	}
	b.send(ctx, s, kindEquip, item, protocol.FeatureInventory, protocol.ActionEquip, protocol.InventoryEquip{Item: item, Slot: slot})
	return true
}

// wearable is a bag item that pack lets be worn, and the first slot it
// goes in; "" when there is none.
func wearable(pack *content.Pack, inv *protocol.Inventory) (item, slot string) {
	if inv == nil {
		return "", ""
	}
	for _, it := range inv.Items {
		def, ok := pack.Item(it.Kind)
		if it.Slot != "" || !ok {
			continue
		}
		for _, sl := range content.Slots() {
			if def.Slots.Has(sl) {
				return it.ID, sl.String()
			}
		}
	}
	return "", ""
}

// walkThroughPortal takes the portal to the room's other map.
func (b *soakBot) walkThroughPortal(ctx context.Context, s *soak) {
	to := "forest"
	if b.c.Welcome().Map == "forest" {
		to = "town"
	}
	portal, err := playtest.WalkToPortal(ctx, b.c, to)
	if err != nil {
		return // the walk failed, or the client reconnects
	}
	start := time.Now() // the crossing, not the walk to the portal
	ack, err := playtest.CrossPortal(ctx, b.c, portal)
	switch {
	case ack.Seq == 0 && !ack.OK && ack.Code == "":
		return // never sent, or never answered: the client reconnects
	case err != nil && ack.OK:
		ack.OK, ack.Code = false, "transfer_unfinished" // acked, but the client did not play on the far side in time
	}
	s.record(action{character: b.character, kind: kindPortal, ok: ack.OK, code: ack.Code, sent: start, latency: time.Since(start)})
}

// send sends one command, waits for its ack and records it (a lost ack
// as no_ack); a pickup's item is the one its ack's inventory gained. A
// command the client could not send (it is reconnecting) is not an action.
func (b *soakBot) send(ctx context.Context, s *soak, kind, item, feature, verb string, payload any) {
	before := slices.Clone(b.acked)
	if inv := b.c.Snapshot().Inventory; inv != nil {
		before = append(before, inv.Items...)
	}
	start := time.Now()
	seq, err := b.c.Command(feature, verb, payload)
	if err != nil {
		s.notSent()
		return
	}
	ack, err := b.c.AwaitAck(ctx, seq)
	if err != nil {
		ack.Code = codeNoAck
	}
	if ack.OK && isCritical(kind) {
		b.acked = ack.Inventory
		if item == "" {
			item = gained(before, ack.Inventory)
		}
	}
	s.record(action{character: b.character, kind: kind, item: item, ok: ack.OK, code: ack.Code, sent: start, latency: time.Since(start)})
}

// isCritical reports whether kind is a critical action (docs/protocol.md).
func isCritical(kind string) bool {
	return kind == kindPickup || kind == kindDrop || kind == kindEquip || kind == kindUnequip
}

// gained is the item of after that none of before held, or "". Given
// every view the bot had before (which may overlap), it never names an
// item that was held already.
func gained(before, after []protocol.ItemView) string {
	held := map[string]bool{}
	for _, it := range before {
		held[it.ID] = true
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
	if inv == nil {
		return ""
	}
	for _, it := range inv.Items {
		if it.Slot == "" {
			return it.ID
		}
	}
	return ""
}
