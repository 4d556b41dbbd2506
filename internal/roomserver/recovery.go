package roomserver

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/content"
	"github.com/roomkeeper/roomkeeper/internal/mapgen"
	"github.com/roomkeeper/roomkeeper/internal/recovery"
	"github.com/roomkeeper/roomkeeper/internal/sim"
	"github.com/roomkeeper/roomkeeper/internal/store"
)

// Critical-item recovery (docs/design.md section 5, docs/architecture.md
// "Critical items"): a map keeps the critical items it made (ids under its
// instance name: its key, its quota items) obtainable. At every tick
// boundary of RecoveryInterval it reads where they are from the database,
// lets recovery.Decide judge them (a pure function of that state, the
// policies and the tick), and carries each decision out: the move and its
// audit row in one transaction (store.Recover), then the item on the
// ground at its anchor. The tick never waits for any of it.

// criticalStore is what recovery needs of the store.
type criticalStore interface {
	CriticalItems(ctx context.Context, kinds []string, now time.Time) ([]store.HeldItem, error)
	Recover(ctx context.Context, r store.Recovery) error
}

// recoverer runs the passes of one map.
type recoverer struct {
	srv      *Server
	db       criticalStore
	policies []content.CriticalPolicy
	kinds    []string
	every    uint64 // ticks between boundaries
	last     uint64 // the boundary of the last pass that ran
	// pending (under mu: world checkpoints read it) are the items in
	// their cooldown; restored with the world.
	mu      sync.Mutex
	pending []recovery.Pending
	// anchors, canonical and reach are the map's, worked out once.
	anchors   map[string][]recovery.Point
	canonical map[string]string
	spawned   map[string]sim.Loot // the generated canonical items, where they spawn
	reach     *mapgen.Reach
}

// newRecoverer is nil when the map has no critical items or no database.
func (s *Server) newRecoverer() *recoverer {
	if s.db == nil {
		return nil
	}
	db, ok := s.db.Store.(criticalStore)
	if !ok || len(s.content.Critical) == 0 {
		return nil
	}
	r := &recoverer{srv: s, db: db, policies: s.content.Critical, reach: s.static.Reach(),
		every:   max(1, uint64(s.cfg.RecoveryInterval.Seconds()*float64(s.cfg.TickRate))),
		anchors: map[string][]recovery.Point{}, canonical: map[string]string{}, spawned: map[string]sim.Loot{}}
	rooms := map[string]recovery.Point{}
	if i := s.static.RoomWith(mapgen.RoleKey); i >= 0 {
		c := s.static.Rooms[i].Rect.Centre()
		rooms[content.AnchorKeyRoom] = recovery.Point{X: float32(c.X), Y: float32(c.Y)}
	}
	if key, ok := keyLoot(s.cfg.Instance, s.static, s.content); ok {
		if _, critical := s.content.Policy(key.Kind); critical {
			r.canonical[key.Kind], r.spawned[key.ID] = key.ID, key
		}
	}
	for _, p := range r.policies {
		r.kinds = append(r.kinds, p.Kind)
		r.anchors[p.Kind] = recovery.ResolveAnchors(p, rooms)
	}
	return r
}

// run passes at every boundary until ctx ends. The policies are the
// pack's: the database holds no copy of them.
func (r *recoverer) run(ctx context.Context) {
	// Wake a few times per interval, so a pass starts soon after its
	// boundary whatever the ticker's phase.
	ticker := time.NewTicker(max(time.Millisecond, r.srv.cfg.RecoveryInterval/4))
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			r.atBoundary(ctx)
		}
	}
}

// atBoundary passes once per boundary the world's tick has reached. A pass
// that fails (the database is down) is tried again at the next one.
func (r *recoverer) atBoundary(ctx context.Context) {
	boundary := r.srv.loop.Stats().Tick / r.every * r.every
	if boundary == 0 || boundary == r.last || !r.srv.world.isReady() {
		return
	}
	if err := r.pass(ctx, boundary); err != nil {
		r.srv.deps.Log.Warn("Critical-item recovery pass failed", "tick", boundary, "err", err)
		return
	}
	r.last = boundary
	r.srv.metrics.recoveryPasses.Inc()
}

// pass decides at tick and carries the decisions out.
func (r *recoverer) pass(ctx context.Context, tick uint64) error {
	ctx, cancel := context.WithTimeout(ctx, r.srv.cfg.CriticalTimeout)
	defer cancel()
	rows, err := r.db.CriticalItems(ctx, r.kinds, r.srv.deps.Clock())
	if err != nil {
		return err
	}
	phases, err := r.phases(ctx)
	if err != nil {
		return err
	}
	res := recovery.Decide(recovery.State{Map: r.srv.cfg.Instance, Tick: tick, Items: r.items(rows),
		Anchors: r.anchors, Canonical: r.canonical, QuestPhases: phases, Pending: r.pendingNow()}, r.policies)
	r.restorePending(res.Pending)
	for _, d := range res.Decisions {
		r.apply(ctx, d)
	}
	r.layMissing(ctx, rows)
	return nil
}

// pendingNow is a copy of the items in their cooldown.
func (r *recoverer) pendingNow() []recovery.Pending {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.pending)
}

// restorePending sets the items in their cooldown.
func (r *recoverer) restorePending(pending []recovery.Pending) {
	r.mu.Lock()
	r.pending = pending
	r.mu.Unlock()
}

// layMissing lays on the ground the map's critical items that the database
// says lie here and the world does not have: a recovery (or a drop) that a
// pod of this map committed as it died, after this pod had restored the
// ground.
func (r *recoverer) layMissing(ctx context.Context, rows []store.HeldItem) {
	var here []store.HeldItem
	for _, row := range rows {
		if row.OwnerKind == store.OwnerMap && row.OwnerID == r.srv.cfg.Instance {
			here = append(here, row)
		}
	}
	if len(here) == 0 {
		return
	}
	r.srv.noteFailure(opLayMissing, r.srv.loop.Do(ctx, func(w *sim.World) { // the next pass tries again
		for _, it := range here {
			if !w.Present(it.ItemID) {
				w.PlaceLoot(sim.Item{ID: it.ItemID, Kind: it.Kind}, it.X, it.Y)
			}
		}
	}))
}

// items are the map's own critical items as recovery sees them: the rows
// under its instance name, and its generated key while no row says it
// moved (it still lies where the map generator put it).
func (r *recoverer) items(rows []store.HeldItem) []recovery.Item {
	instance := r.srv.cfg.Instance
	var items []recovery.Item
	stored := map[string]bool{}
	for _, row := range rows {
		if !strings.HasPrefix(row.ItemID, instance+"/") {
			continue // another map's: its own passes keep it
		}
		stored[row.ItemID] = true
		place := recovery.Place{Kind: recovery.PlaceKind(row.OwnerKind), Owner: row.OwnerID, X: row.X, Y: row.Y,
			Online: row.Online, OfflineFor: row.OfflineFor}
		reachable := row.OwnerKind == store.OwnerMap && row.OwnerID == instance && r.reach.Has(row.X, row.Y)
		items = append(items, recovery.Item{ID: row.ItemID, Kind: row.Kind, Place: place, Reachable: reachable})
	}
	for id, l := range r.spawned {
		if !stored[id] {
			items = append(items, recovery.Item{ID: id, Kind: l.Kind, Reachable: r.reach.Has(l.X, l.Y),
				Place: recovery.Place{Kind: recovery.Ground, Owner: instance, X: l.X, Y: l.Y}})
		}
	}
	return items
}

// phases are the quest phases this map has reached: its key and boss
// rooms cleared.
func (r *recoverer) phases(ctx context.Context) ([]string, error) {
	var phases []string
	err := r.srv.loop.Do(ctx, func(w *sim.World) { phases = w.QuestPhases() })
	return phases, err
}

// apply commits one decision, then lays the item at its anchor. A
// decision the database refuses because the item moved meanwhile (a
// pickup won the race) is dropped: the next pass judges the item anew.
// One that fails for another reason is due again at the next pass.
func (r *recoverer) apply(ctx context.Context, d recovery.Decision) {
	rec := store.Recovery{EventID: d.EventID, ItemID: d.ItemID, Kind: d.Kind, MapInstance: d.Map, Tick: int64(d.Tick),
		Reason: string(d.Reason), FromKind: string(d.From.Kind), FromID: d.From.Owner, FromX: d.From.X, FromY: d.From.Y, ToX: d.To.X, ToY: d.To.Y,
		Now: r.srv.deps.Clock()}
	if _, generated := r.spawned[d.ItemID]; generated && d.From.Kind == recovery.Ground && d.From.Owner == d.Map {
		rec.FromKind = "" // lying at its spawn: no row yet
	}
	err := r.db.Recover(ctx, rec)
	switch {
	case errors.Is(err, store.ErrItemTaken):
		r.srv.deps.Log.Info("Critical item moved before its recovery; judged again next pass", "item", d.ItemID)
		return
	case err != nil:
		r.srv.deps.Log.Warn("Critical-item recovery failed; retrying next pass", "item", d.ItemID, "err", err)
		r.mu.Lock()
		r.pending = append(r.pending, recovery.Pending{ItemID: d.ItemID, Kind: d.Kind, Reason: d.Reason})
		r.mu.Unlock()
		return
	}
	r.srv.metrics.recoveries.WithLabelValues(string(d.Reason)).Inc()
	r.srv.deps.Log.Info("Critical item recovered", "item", d.ItemID, "kind", d.Kind, "reason", d.Reason,
		"from", d.From.Kind, "owner", d.From.Owner, "x", d.To.X, "y", d.To.Y, "tick", d.Tick)
	r.srv.applyInWorld(func(w *sim.World) {
		w.PlaceLoot(sim.Item{ID: d.ItemID, Kind: d.Kind}, d.To.X, d.To.Y)
	})
}
