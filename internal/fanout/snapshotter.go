package fanout

import (
	"github.com/roomkeeper/roomkeeper/internal/aoi"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/sim"
)

// baselineCount is how many sent snapshots a client can acknowledge back:
// at 20 Hz, 32 is 1.6 s of round trip before deltas fall back to full.
const baselineCount = 32

// Snapshotter is one client's side of its snapshots: the cell it watches
// and the views it was sent that a later delta may be built against. It is
// owned by the client's writer goroutine.
type Snapshotter struct {
	tracker aoi.Tracker
	idx     []int32
	// sent are the views sent, by tick modulo baselineCount. Only the one
	// the client acknowledged last and those sent after it are kept: a
	// client acknowledges newer and newer ticks, so an older one is never
	// a base again.
	sent [baselineCount]*View
	buf  []byte
	// owned is the player's inventory as last sent: a snapshot carries
	// the inventory channel when the world's differs (or in full mode).
	owned *sim.Owned
}

func NewSnapshotter(cellSize, hysteresis float32) Snapshotter {
	return Snapshotter{tracker: aoi.NewTracker(cellSize, hysteresis), buf: make([]byte, 0, 4096)}
}

// Next returns this client's view of f and the base it is a delta against
// (nil: a full snapshot). The caller holds f, and once it has encoded the
// snapshot, calls Remember(v, ackTick), which may let go of base.
func (sn *Snapshotter) Next(f *Frame, me sim.View, ackTick uint64) (v, base *View) {
	cell, _ := sn.tracker.Update(me.X, me.Y)
	v, sn.idx = f.view(cell, sn.idx)
	return v, sn.base(ackTick)
}

// Cell is the cell the client watches, as of its last snapshot.
func (sn *Snapshotter) Cell() aoi.Cell { return sn.tracker.Cell() }

// base returns the view the client acknowledged, if it is still kept.
func (sn *Snapshotter) base(ackTick uint64) *View {
	if ackTick == 0 {
		return nil
	}
	if v := sn.sent[ackTick%baselineCount]; v != nil && v.tick == ackTick {
		return v
	}
	return nil
}

// Remember keeps v as a future base and lets go of those older than
// ackTick, the client's newest acknowledged.
func (sn *Snapshotter) Remember(v *View, ackTick uint64) {
	for i, old := range sn.sent {
		if old != nil && old.tick < ackTick {
			old.release()
			sn.sent[i] = nil
		}
	}
	v.hold()
	slot := &sn.sent[v.tick%baselineCount]
	if *slot != nil { // baselineCount snapshots in flight: the oldest goes
		(*slot).release()
	}
	*slot = v
}

// Close lets go of every view; the Snapshotter is done.
func (sn *Snapshotter) Close() {
	for i, v := range sn.sent {
		if v != nil {
			v.release()
			sn.sent[i] = nil
		}
	}
}

// Inventory is the inventory channel to send with the next snapshot: the
// player's when it changed since the last one sent, or when base is nil
// (a full snapshot); else nil.
func (sn *Snapshotter) Inventory(owned *sim.Owned, base *View) *protocol.Inventory {
	if owned == nil || (owned == sn.owned && base != nil) {
		return nil
	}
	sn.owned = owned
	return InventoryView(owned)
}

// ItemViews are the items a player carries and wears, as the protocol
// shows them (in snapshots, acks and the welcome).
func ItemViews(o *sim.Owned) []protocol.ItemView {
	if o == nil {
		return nil
	}
	views := make([]protocol.ItemView, 0, len(o.Bag)+len(o.Worn))
	for _, it := range o.Bag {
		views = append(views, protocol.ItemView{ID: it.ID, Kind: it.Kind})
	}
	for _, it := range o.Worn {
		views = append(views, protocol.ItemView{ID: it.ID, Kind: it.Kind, Slot: it.Slot.String()})
	}
	return views
}

// InventoryView is what a player is shown of its own inventory.
func InventoryView(o *sim.Owned) *protocol.Inventory {
	inv := &protocol.Inventory{Items: ItemViews(o), Weight: o.Weight, Skills: make([]protocol.SkillView, len(o.Skills))}
	for i, s := range o.Skills {
		inv.Skills[i] = protocol.SkillView{Name: s.Name, Level: s.Level, XP: s.XP}
	}
	if r := o.Resources; r.ManaMax > 0 || r.StaminaMax > 0 {
		inv.Resources = &protocol.ResourcesView{Mana: r.Mana, ManaMax: r.ManaMax, Stamina: r.Stamina, StaminaMax: r.StaminaMax}
	}
	for _, b := range o.Buffs {
		inv.Buffs = append(inv.Buffs, protocol.BuffView{Ability: b.Ability, Attack: b.Attack, Defence: b.Defence, Until: b.Until})
	}
	for _, a := range o.Abilities {
		inv.Cooldowns = append(inv.Cooldowns, protocol.CooldownView{Ability: a.Name, Ready: a.Ready})
	}
	return inv
}

// Binary encodes v for this client into the reused buffer.
func (sn *Snapshotter) Binary(f *Frame, v, base *View, ackSeq uint32, inv *protocol.Inventory) []byte {
	h := protocol.BinaryHeader{Mode: protocol.BinaryModeFull, Tick: v.tick, AckSeq: ackSeq, Inventory: inv}
	if base != nil {
		h.Mode, h.BaseTick = protocol.BinaryModeDelta, base.tick
	}
	sn.buf = append(protocol.AppendBinaryHeader(sn.buf[:0], h), f.encoding(v, base)...)
	sn.buf = protocol.AppendBinaryInventory(sn.buf, inv)
	return sn.buf
}

// JSONSnapshot builds v as a full or delta JSON snapshot.
func JSONSnapshot(v, base *View, ackSeq uint32, inv *protocol.Inventory) protocol.Snapshot {
	snap := protocol.Snapshot{Tick: v.tick, AckSeq: ackSeq, Mode: protocol.ModeFull, Inventory: inv}
	if base == nil {
		for _, e := range v.states {
			addArrival(&snap, e)
		}
		return snap
	}
	snap.Mode, snap.BaseTick = protocol.ModeDelta, base.tick
	diffStates(base.states, v.states, &snap)
	return snap
}

// addArrival lists e in snap as an entity that came into view.
func addArrival(snap *protocol.Snapshot, e protocol.WireState) {
	snap.Presence.Add = append(snap.Presence.Add, protocol.Arrival{ID: e.ID, Kind: e.Kind})
	snap.Movement = append(snap.Movement, position(e))
	snap.Channel(e)
}

// position is e's position as a JSON snapshot carries it: on the binary
// codec's grid, so both codecs show a client the same world.
func position(e protocol.WireState) protocol.Position {
	return protocol.Position{ID: e.ID, X: protocol.Dequantize(e.X), Y: protocol.Dequantize(e.Y)}
}

// diffStates fills snap with what changed from base to cur; both are sorted by ID.
func diffStates(base, cur []protocol.WireState, snap *protocol.Snapshot) {
	i, j := 0, 0
	for i < len(base) || j < len(cur) {
		switch {
		case j == len(cur) || (i < len(base) && base[i].ID < cur[j].ID):
			snap.Presence.Remove = append(snap.Presence.Remove, base[i].ID)
			i++
		case i == len(base) || cur[j].ID < base[i].ID:
			addArrival(snap, cur[j])
			j++
		default:
			was, is := base[i], cur[j]
			if was.X != is.X || was.Y != is.Y {
				snap.Movement = append(snap.Movement, position(is))
			}
			if protocol.ExtrasChanged(was, is) {
				snap.Channel(is)
			}
			i, j = i+1, j+1
		}
	}
}

func abs32(v int32) int32 {
	if v < 0 {
		return -v
	}
	return v
}
