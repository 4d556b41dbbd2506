package roomserver

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/recovery"
	"github.com/roomkeeper/roomkeeper/internal/sim"
	"github.com/roomkeeper/roomkeeper/internal/store"
)

// The map's world (docs/operations.md, "The world survives its pod") is
// checkpointed to map_state like a character's state: versioned, hashed,
// fenced. A pod takes the world before it admits anyone:
//
//   - a pod that starts in a map's place (the first, a crash's
//     replacement, a recreate) claims the world and restores its last
//     checkpoint before it is Ready;
//   - a pod that takes a map over by handover waits, Ready, for the old
//     pod to stop its world at a tick and write it (released), and then
//     claims it and goes on from exactly that tick; hellos wait
//     meanwhile. Should the old pod die first, the operator ends the
//     handover and the new pod takes the last checkpoint (AdoptWorld).
//
// The claim fences every earlier pod: a write of the old pod after it is
// refused. The tick goroutine only copies the world into a buffer kept
// for it; hashing and writing happen off it.

// The world checkpoint's format: bump worldSchema when the payload's
// layout changes. The simulation core is the characters' simCoreVersion:
// a world of another core is refused, never guessed at.
const worldSchema = 1

// worldStore is what the world needs of the store (store.Postgres).
type worldStore interface {
	ClaimWorld(ctx context.Context, mapInstance, pod string) (store.WorldState, error)
	SaveWorld(ctx context.Context, s store.WorldState) error
	WorldClaimOf(ctx context.Context, mapInstance string) (store.WorldClaim, error)
	itemLookup
}

// WorldCheckpoint describes the newest world checkpoint this pod wrote or
// restored, for heartbeats (MapInstance status.world).
type WorldCheckpoint struct {
	Revision int64
	Time     time.Time
	sim.WorldSummary
	// Error is the last write's failure, "" once one succeeds.
	Error string
}

// worldKeeper claims, restores and writes the map's world.
type worldKeeper struct {
	srv *Server
	db  worldStore

	// awaiting is Config.TakesOver; ready is closed once the world is
	// this pod's.
	awaiting  bool
	readyOnce sync.Once
	ready     chan struct{}
	kick      chan struct{}
	// groundOnce resyncs the ground at a handover's first arrival.
	groundOnce sync.Once

	// mu serialises writes; epoch and revision are the claim's and the
	// last written, buf the payload's buffer, kept between writes.
	mu       sync.Mutex
	epoch    int64
	revision int64
	released bool
	buf      []byte
	// arrivals and occupied are the world's at the last write: a world
	// nobody entered since, empty then and now, is not written again.
	arrivals uint64
	occupied bool
	last     atomic.Pointer[WorldCheckpoint]
}

func newWorldKeeper(s *Server, db worldStore) *worldKeeper {
	return &worldKeeper{srv: s, db: db, awaiting: s.cfg.TakesOver, ready: make(chan struct{}), kick: make(chan struct{}, 1)}
}

// AdoptWorld makes a server still waiting for a handed-over world take
// the map's last checkpoint now: the handover it waited for is over
// without the old pod's last write (it died first).
func (s *Server) AdoptWorld() {
	if s.world != nil {
		s.world.nudge()
	}
}

func (k *worldKeeper) nudge() {
	select {
	case k.kick <- struct{}{}:
	default:
	}
}

// waitReady waits until the world is this pod's; handedOver says the
// hello comes from the old pod's handover, so the old pod has released
// the world: it is claimed at once.
func (k *worldKeeper) waitReady(ctx context.Context, handedOver bool) error {
	if handedOver {
		k.nudge()
	}
	select {
	case <-k.ready:
		return nil
	case <-ctx.Done():
		return errWorldHandover
	}
}

// take makes the world this pod's: at once, or, for a handover's new pod,
// once the old one released it, or once told to adopt it. It retries
// while the database is away; a checkpoint it cannot restore keeps the
// map not Ready (WaitingFor says why) rather than starting it afresh.
func (k *worldKeeper) take(ctx context.Context) bool {
	if k.awaiting && !k.awaitRelease(ctx) {
		return false
	}
	return k.srv.retryWaiting(ctx, "Restoring the world", k.claimAndRestore)
}

// awaitRelease polls the world's claim until its holder released it, or
// a nudge says to go ahead (a handed-over player arrived: its old pod
// wrote the world before it let the player go; or the handover ended
// without it); false when ctx ended first.
func (k *worldKeeper) awaitRelease(ctx context.Context) bool {
	poll := time.NewTicker(worldReleasePoll)
	defer poll.Stop()
	for {
		claim, err := k.db.WorldClaimOf(ctx, k.srv.cfg.Instance)
		if err == nil && claim.Released {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-k.kick:
			return true
		case <-poll.C:
		}
	}
}

// worldReleasePoll is how often a handover's new pod asks whether the old
// one released the world: a fraction of the players' pause.
const worldReleasePoll = 100 * time.Millisecond

// claimAndRestore claims the world and restores its last checkpoint with
// the loot the database says lies on the ground.
func (k *worldKeeper) claimAndRestore(ctx context.Context) error {
	saved, err := k.db.ClaimWorld(ctx, k.srv.cfg.Instance, k.srv.cfg.Pod)
	if err != nil {
		return unrestorable(saved, err)
	}
	world, extras, err := decodeWorld(saved)
	if err != nil {
		return unrestorable(saved, err)
	}
	var restoredTick uint64
	restore := func(w *sim.World) {
		err = restoreWorld(w, world)
		restoredTick = w.Tick()
	}
	if err := k.srv.loop.Do(ctx, restore); err != nil {
		return err
	}
	if errors.Is(err, sim.ErrWorldMismatch) {
		k.srv.deps.Log.Warn("The world checkpoint is of another map (its config changed): the world starts afresh",
			"revision", saved.Revision, "err", err)
	} else if err != nil {
		return unrestorable(saved, err)
	}
	summary, err := k.syncGround(ctx)
	if err != nil {
		return err
	}
	k.mu.Lock()
	k.epoch, k.revision, k.released = saved.Epoch, saved.Revision, false
	k.mu.Unlock()
	// The world ticks on while the ground is synced: the checkpoint
	// restored is of the tick it was restored at.
	summary.Tick = restoredTick
	if saved.Revision > 0 {
		k.last.Store(&WorldCheckpoint{Revision: saved.Revision, Time: saved.UpdatedAt, WorldSummary: summary})
		k.srv.deps.Log.Info("Restored the world", "revision", saved.Revision, "tick", summary.Tick, "from", saved.Pod,
			"roomsCleared", summary.RoomsCleared, "bossPhase", summary.BossPhase)
	}
	if r := k.srv.recoverer; r != nil {
		r.restorePending(extras.Recovery)
	}
	k.readyOnce.Do(func() { close(k.ready) })
	return nil
}

// unrestorable says how to get past a checkpoint that can never be
// restored (corrupt, of an unknown schema or simulation core); other
// errors (the database away) pass as they are.
func unrestorable(saved store.WorldState, err error) error {
	for _, bad := range []error{store.ErrCorrupt, store.ErrUnknownSchema, store.ErrUnknownSimCore, sim.ErrCorruptWorld} {
		if errors.Is(err, bad) {
			return fmt.Errorf("%w; the map stays down rather than start its world afresh: "+
				"to do so, delete its map_state row (map_instance %q)", err, saved.MapInstance)
		}
	}
	return err
}

// restoreWorld restores the checkpoint (none: a map's first world) into w.
func restoreWorld(w *sim.World, checkpoint []byte) error {
	if checkpoint == nil {
		return nil
	}
	return w.Restore(checkpoint)
}

// syncGround makes the ground the database's: the generated loot nobody
// took and the items laid here lie where it says; of the loot on the
// ground now, what it does not know at all (the drops of enemies nobody
// picked up) stays. It returns the world's summary then.
func (k *worldKeeper) syncGround(ctx context.Context) (sim.WorldSummary, error) {
	var summary sim.WorldSummary
	loot, err := groundLoot(ctx, k.srv.db.Store, k.srv.cfg.Instance, spawnLoot(k.srv.cfg.Instance, k.srv.static, k.srv.content))
	if err != nil {
		return summary, err
	}
	var ground []sim.Loot
	if err := k.srv.loop.Do(ctx, func(w *sim.World) { ground = w.Ground() }); err != nil {
		return summary, err
	}
	undropped, err := notStored(ctx, k.db, ground, loot)
	if err != nil {
		return summary, err
	}
	err = k.srv.loop.Do(ctx, func(w *sim.World) {
		w.SyncLoot(append(loot, undropped...))
		summary = w.Summary()
	})
	return summary, err
}

// resyncGround makes the ground the database's once, at the first player
// a handover brings: until then the old pod served the map, and what was
// picked up or laid there since this pod restored the ground is in the
// database only (this pod took the world at start when it could not
// learn it takes a handover). By then the old pod's actions have ended.
func (k *worldKeeper) resyncGround() {
	k.groundOnce.Do(func() {
		k.srv.work.Go(func() {
			ctx, cancel := k.srv.work.context(k.srv.cfg.TransferTimeout)
			defer cancel()
			_, err := k.syncGround(ctx)
			k.srv.noteFailure(opSyncLoot, err)
		})
	})
}

// run writes the world every interval until ctx ends.
func (k *worldKeeper) run(ctx context.Context, interval time.Duration) {
	select {
	case <-k.ready:
	case <-ctx.Done():
		return
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			k.srv.noteFailure(opWorldCheckpoint, k.save(ctx, false))
		}
	}
}

// save writes the world as it is at the next tick boundary; final stops
// the world there first and marks the checkpoint released, the world's
// last from this pod. Nothing is written before the world is this pod's,
// or after its last checkpoint; nor, but the last, while nobody plays: a
// map without players changes only by its enemies respawning on their
// schedule (its NPCs sleep: docs/design.md, "Density"), which the next
// checkpoint takes as it is, and a quiet map asks its database nothing
// (its connections close).
func (k *worldKeeper) save(ctx context.Context, final bool) error {
	select {
	case <-k.ready:
	default:
		return nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.released {
		return nil
	}
	var summary sim.WorldSummary
	unplayed := false
	snapshot := func(w *sim.World) {
		occupied := w.Players() > 0
		if unplayed = !final && !occupied && !k.occupied && w.Arrivals() == k.arrivals; unplayed {
			return
		}
		k.occupied, k.arrivals = occupied, w.Arrivals()
		k.buf = w.AppendCheckpoint(k.buf[:0])
		summary = w.Summary()
	}
	var err error
	if final {
		err = k.srv.loop.Freeze(ctx, snapshot)
	} else {
		err = k.srv.loop.Do(ctx, snapshot)
	}
	if err != nil || unplayed {
		return err
	}
	payload := k.payload()
	state := store.WorldState{MapInstance: k.srv.cfg.Instance, SchemaVersion: worldSchema, SimCoreVersion: simCoreVersion,
		Revision: k.revision + 1, SavedTick: int64(summary.Tick), Payload: payload, Epoch: k.epoch, Released: final}
	start := time.Now()
	if err := k.db.SaveWorld(ctx, state); err != nil {
		k.failed(err)
		return err
	}
	k.srv.metrics.worldCheckpointSeconds.Observe(time.Since(start).Seconds())
	k.srv.metrics.worldCheckpointBytes.Set(float64(len(payload)))
	k.revision, k.released = state.Revision, final
	k.last.Store(&WorldCheckpoint{Revision: state.Revision, Time: k.srv.deps.Clock(), WorldSummary: summary})
	return nil
}

// failed records a write's failure for the heartbeat; a fenced write
// means another pod has the map's world now, so this pod stops writing.
func (k *worldKeeper) failed(err error) {
	k.srv.metrics.worldCheckpointFailures.Inc()
	c := WorldCheckpoint{Error: err.Error()}
	if prev := k.last.Load(); prev != nil {
		c.Revision, c.Time, c.WorldSummary = prev.Revision, prev.Time, prev.WorldSummary
	}
	k.last.Store(&c)
	if errors.Is(err, store.ErrWorldFenced) {
		k.released = true
		k.srv.deps.Log.Warn("Another pod took this map's world: this pod writes it no more", "err", err)
	}
}

// worldExtras is what the room server keeps in a world checkpoint beside
// the simulation's: the critical-item recovery's cooldowns, whose ticks
// go on with the world's.
type worldExtras struct {
	Recovery []recovery.Pending `json:"recovery,omitempty"`
}

// payload is the stored form: the simulation's checkpoint (k.buf), its
// length first, then the room server's extras as JSON.
func (k *worldKeeper) payload() []byte {
	var extras worldExtras
	if r := k.srv.recoverer; r != nil {
		extras.Recovery = r.pendingNow()
	}
	tail, _ := json.Marshal(extras) // plain struct: cannot fail
	payload := binary.LittleEndian.AppendUint32(make([]byte, 0, 4+len(k.buf)+len(tail)), uint32(len(k.buf)))
	return append(append(payload, k.buf...), tail...)
}

// decodeWorld checks a stored world (versions; the store checked its
// hash) and splits it; a nil world is a map that has none yet.
func decodeWorld(s store.WorldState) ([]byte, worldExtras, error) {
	var extras worldExtras
	switch {
	case s.Revision == 0:
		return nil, extras, nil
	case s.SimCoreVersion != simCoreVersion:
		return nil, extras, fmt.Errorf("world of %q (this server runs %s): %w", s.SimCoreVersion, simCoreVersion, store.ErrUnknownSimCore)
	case s.SchemaVersion != worldSchema:
		return nil, extras, fmt.Errorf("world schema %d: %w", s.SchemaVersion, store.ErrUnknownSchema)
	case len(s.Payload) < 4 || int(binary.LittleEndian.Uint32(s.Payload)) > len(s.Payload)-4:
		return nil, extras, fmt.Errorf("world payload of %d bytes: %w", len(s.Payload), store.ErrCorrupt)
	}
	n := 4 + int(binary.LittleEndian.Uint32(s.Payload))
	if err := json.Unmarshal(s.Payload[n:], &extras); err != nil {
		return nil, extras, fmt.Errorf("world extras: %w: %w", err, store.ErrCorrupt)
	}
	return s.Payload[4:n], extras, nil
}

// errWorldHandover refuses a hello that came while the map's world was
// being handed over from its old pod for longer than the hello may wait.
var errWorldHandover = errors.New("the map's world is being handed over from its old pod: try again")

// WorldStatus is the newest world checkpoint, for heartbeats; false
// before the first (and without a database).
func (s *Server) WorldStatus() (WorldCheckpoint, bool) {
	if s.world == nil {
		return WorldCheckpoint{}, false
	}
	if c := s.world.last.Load(); c != nil {
		return *c, true
	}
	return WorldCheckpoint{}, false
}

// isReady reports whether the world is this pod's; true without a
// database (the world is then only ever this process's).
func (k *worldKeeper) isReady() bool {
	if k == nil {
		return true
	}
	select {
	case <-k.ready:
		return true
	default:
		return false
	}
}
