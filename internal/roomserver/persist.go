package roomserver

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/sim"
	"github.com/roomkeeper/roomkeeper/internal/store"
)

// persister writes checkpoints on its own goroutine: the tick loop only
// hands it immutable records. What cannot be
// written (the database is down) stays pending, newest revision per
// character, and is retried with backoff; nothing acknowledged depends on
// it, since critical actions commit on their own.
type persister struct {
	srv      *Server
	db       *persistence
	interval time.Duration

	mu      sync.Mutex
	pending map[string]store.CharacterState
	// releases are leases to give up once the batch holding their
	// character's last state has committed: released first, the state
	// would be fenced out.
	releases []store.Lease
	kick     chan struct{}
	// last is the newest committed checkpoint, for heartbeats.
	last atomic.Pointer[Checkpoint]
}

// Checkpoint identifies a committed checkpoint batch: the highest revision
// in it and when it committed.
type Checkpoint struct {
	Revision int64
	Time     time.Time
}

func newPersister(srv *Server, db *persistence, interval time.Duration) *persister {
	return &persister{srv: srv, db: db, interval: interval,
		pending: map[string]store.CharacterState{}, kick: make(chan struct{}, 1)}
}

// run checkpoints every interval, flushes when kicked and prunes consumed
// tokens (at once, then every minute), until ctx ends.
func (p *persister) run(ctx context.Context) {
	checkpoint := time.NewTicker(p.interval)
	defer checkpoint.Stop()
	prune := time.NewTicker(time.Minute)
	defer prune.Stop()
	retry := time.NewTimer(time.Hour)
	defer retry.Stop()
	backoff := minBackoff
	p.srv.noteFailure(opPruneTokens, p.db.pruneTokens(ctx, p.srv.deps.Replay))
	for {
		select {
		case <-ctx.Done():
			return
		case <-checkpoint.C:
			p.collect(ctx, false)
		case <-p.kick:
		case <-retry.C:
		case <-prune.C:
			p.srv.noteFailure(opPruneTokens, p.db.pruneTokens(ctx, p.srv.deps.Replay))
			continue
		}
		if err := p.flush(ctx); err != nil {
			retry.Reset(backoff)
			backoff = min(2*backoff, p.interval)
		} else {
			backoff = minBackoff
		}
	}
}

const minBackoff = 100 * time.Millisecond

// collect takes the dirty players' records from the world.
func (p *persister) collect(ctx context.Context, all bool) {
	var records []sim.PlayerRecord
	if err := p.srv.loop.Do(ctx, func(w *sim.World) { records = w.CollectDirty(all) }); err != nil {
		return
	}
	p.add(records...)
}

// add queues records, keeping the newest revision per character.
func (p *persister) add(records ...sim.PlayerRecord) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range records {
		if old, ok := p.pending[r.Tag]; !ok || old.Revision < r.Revision {
			p.pending[r.Tag] = encodeState(p.srv.cfg.Map, r)
		}
	}
}

// save queues one record and asks for a flush soon.
func (p *persister) save(r sim.PlayerRecord) {
	p.add(r)
	p.flushSoon()
}

func (p *persister) flushSoon() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// release queues the player's last record and gives up its lease once
// that record is written.
func (p *persister) release(r sim.PlayerRecord, saved bool, lease store.Lease) {
	if saved {
		p.add(r)
	}
	p.mu.Lock()
	p.releases = append(p.releases, lease)
	p.mu.Unlock()
	p.flushSoon()
}

// forget drops what is pending for a character that left through a
// portal: its transfer wrote its state, and the lease is gone anyway.
func (p *persister) forget(character string) {
	p.mu.Lock()
	delete(p.pending, character)
	p.mu.Unlock()
}

// flush writes everything pending as one batch, then gives up the leases
// waiting for it. On failure the batch goes back to pending unless a newer
// revision arrived meanwhile, and the leases wait for the next try.
func (p *persister) flush(ctx context.Context) error {
	p.mu.Lock()
	batch := make([]store.CharacterState, 0, len(p.pending))
	for _, s := range p.pending {
		batch = append(batch, s)
	}
	clear(p.pending)
	releases := p.releases
	p.releases = nil
	p.mu.Unlock()
	if len(batch) == 0 {
		p.releaseLeases(ctx, releases)
		return nil
	}
	start := time.Now()
	err := p.db.saveStates(ctx, batch)
	if err == nil {
		p.srv.metrics.checkpointSeconds.Observe(time.Since(start).Seconds())
		p.committed(batch)
		p.releaseLeases(ctx, releases)
		return nil
	}
	p.srv.metrics.checkpointFailures.Inc()
	p.srv.deps.Log.Warn("Checkpoint failed; will retry", "characters", len(batch), "err", err)
	p.mu.Lock()
	for _, s := range batch {
		if newer, ok := p.pending[s.CharacterID]; !ok || newer.Revision < s.Revision {
			p.pending[s.CharacterID] = s
		}
	}
	p.releases = append(p.releases, releases...)
	p.mu.Unlock()
	return err
}

// releaseLeases gives leases up; one that fails expires by itself.
func (p *persister) releaseLeases(ctx context.Context, leases []store.Lease) {
	for _, l := range leases {
		p.srv.noteFailure(opReleaseLease, p.db.ReleaseLease(ctx, l)) // one not released expires by itself
	}
}

// checkpointSeat saves one seated player soon, as when its connection drops.
func (s *Server) checkpointSeat(st *seat) {
	if !s.persisted(st) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.CriticalTimeout)
	defer cancel()
	var record sim.PlayerRecord
	var ok bool
	if s.loop.Do(ctx, func(w *sim.World) { record, ok = w.Record(st.player) }) == nil && ok {
		s.db.checkpoints.save(record)
	}
}

// committed records the batch as the newest checkpoint.
func (p *persister) committed(batch []store.CharacterState) {
	c := Checkpoint{Time: p.srv.deps.Clock()}
	if prev := p.last.Load(); prev != nil {
		c.Revision = prev.Revision
	}
	for _, s := range batch {
		c.Revision = max(c.Revision, s.Revision)
	}
	p.last.Store(&c)
}

// finalFlush saves every player now, for shutdown.
func (p *persister) finalFlush(ctx context.Context) error {
	p.collect(ctx, true)
	return p.flush(ctx)
}
