package roomserver

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/store"
)

// leaseKeeper keeps this map's authority over its players: it renews their
// leases every third of the lease TTL, evicts a player whose lease another
// map took over, and aborts the transfers out of this map whose tokens
// expired unused, so their characters can play again.
type leaseKeeper struct {
	srv *Server
	db  *persistence
	// failing is set while renewals fail for another reason than a lost
	// lease (the database is away): logged when it starts and ends.
	failing bool
	// sweepUntil is the latest expiry of a transfer out of this map
	// (unix nanoseconds), swept the latest complete sweep that began at
	// or after it (unix nanoseconds). The keeper sweeps until a sweep
	// has begun past every expiry: after that a map that sends nobody
	// anywhere (a guests-only map, say) asks the database nothing, and its
	// pool can close its last connection.
	sweepUntil, swept atomic.Int64
}

func newLeaseKeeper(srv *Server, db *persistence) *leaseKeeper {
	k := &leaseKeeper{srv: srv, db: db}
	// The pod this one replaced may have sent players away just before.
	k.expectSweep(srv.transferDeadline())
	return k
}

// expectSweep makes the keeper sweep until a sweep begins after
// deadline, a transfer's expiry.
func (k *leaseKeeper) expectSweep(deadline time.Time) {
	until := deadline.UnixNano()
	for {
		cur := k.sweepUntil.Load()
		if cur >= until || k.sweepUntil.CompareAndSwap(cur, until) {
			return
		}
	}
}

func (k *leaseKeeper) run(ctx context.Context) {
	tick := time.NewTicker(k.srv.cfg.LeaseTTL / 3)
	defer tick.Stop()
	for {
		if k.swept.Load() <= k.sweepUntil.Load() {
			k.sweepTransfers(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			k.renew(ctx)
		}
	}
}

// renew extends the leases of everyone seated here; a player whose lease
// was taken over is disconnected, since another map now owns them. All
// leases go in one statement; only when one was lost are they renewed one
// by one, to find whose.
func (k *leaseKeeper) renew(ctx context.Context) {
	var seated []*seat
	var leases []store.Lease
	for _, st := range k.srv.seats.all() {
		if lease := st.lease(); lease.CharacterID != "" {
			seated, leases = append(seated, st), append(leases, lease)
		}
	}
	if len(leases) == 0 {
		return
	}
	err := k.db.renewLeases(ctx, leases)
	k.noteRenewal(err, len(leases))
	if !errors.Is(err, store.ErrLeaseLost) {
		return
	}
	for _, st := range seated {
		lease := st.lease()
		if lostToAnotherMap(st, lease, errors.Is(k.db.renewLeases(ctx, []store.Lease{lease}), store.ErrLeaseLost)) {
			k.srv.deps.Log.Warn("Authority lease lost", "character", st.character)
			k.srv.evict(st, "the character became active in another map")
		}
	}
}

// lostToAnotherMap tells whether st's character belongs to another map
// now, when renewing its lease as it was (renewed) failed as lost or not.
// Read after the renewal: a transfer marks its seat before it hands the
// lease over, so a lease lost to the seat's own transfer is seen here;
// and a transfer that came back (returned to the source) gave the seat a
// new lease, under a new epoch, before it cleared the mark, so a renewal
// of the lease from before the return fails for a character this map
// holds (a 50-room soak's player signed out 80 ms after its return,
// docs/benchmarks.md, "Eleventh session").
func lostToAnotherMap(st *seat, renewed store.Lease, lost bool) bool {
	return lost && !st.transferring.Load() && st.lease().Epoch == renewed.Epoch
}

// noteRenewal makes failed renewals visible: a database that stays away
// longer than the lease TTL lets the leases lapse, and another map may
// then take the characters over (this map's writes are fenced out and its
// players evicted at the next renewal).
func (k *leaseKeeper) noteRenewal(err error, leases int) {
	switch {
	case err != nil && !errors.Is(err, store.ErrLeaseLost):
		k.srv.metrics.leaseRenewalFailures.Inc()
		if !k.failing {
			k.srv.deps.Log.Warn("Renewing authority leases failed; they lapse if this lasts past the lease TTL",
				"leases", leases, "ttl", k.srv.cfg.LeaseTTL, "err", err)
		}
		k.failing = true
	case k.failing:
		k.srv.deps.Log.Info("Renewing authority leases works again", "leases", leases)
		k.failing = false
	}
}

// sweepTransfers aborts this map's transfers whose every token expired
// without the destination taking the character (abortTransfer).
func (k *leaseKeeper) sweepTransfers(ctx context.Context) {
	began := k.srv.deps.Clock()
	expired, err := k.db.expiredTransfers(ctx)
	if err != nil {
		k.srv.noteFailure(opSweepTransfers, err) // the next sweep tries again
		return
	}
	for _, t := range expired {
		k.srv.noteFailure(opAbortTransfer, k.srv.abortTransfer(ctx, t))
	}
	if len(expired) < store.ExpiredTransfersPage { // else there may be more: sweep again
		k.swept.Store(began.UnixNano())
	}
}
