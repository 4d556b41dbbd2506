package roomserver

import (
	"context"
	"fmt"

	"github.com/roomkeeper/roomkeeper/internal/store"
)

// Players arriving by transfer are admitted in batches. A handover sends
// all of a map's players to its successor at once; each arrival's
// transfer, lease, checkpoint and items in a transaction of its own took
// about eight round trips, fifty arrivals queueing for the pod's few
// connections. Instead one goroutine at a time admits every arrival that
// gathered meanwhile in one transaction (store.ArriveByTransfers), so a
// handover's players wait for a few transactions, and a lone player
// through a portal for one, as before.

// arrivalRequest is a seat waiting for the batch that admits it.
type arrivalRequest struct {
	store.ArrivalRequest
	done chan store.ArrivalResult // buffered: the batch never waits for its seat
}

// acceptTransfer takes the character of st's transfer on this map, the
// destination (token_issued -> destination_accepted), claims its lease
// and loads it, in the next batch. On the map the transfer left (its
// client came back with the return ticket) the transfer is aborted
// instead, and the arrival says Returned. The batch's own timeout bounds
// the wait.
func (s *Server) acceptTransfer(st *seat) store.ArrivalResult {
	r := arrivalRequest{ArrivalRequest: store.ArrivalRequest{TransferID: st.transfer, CharacterID: st.character},
		done: make(chan store.ArrivalResult, 1)}
	if _, start := s.arrivals.push(r, 0); start && !s.work.Go(s.admitArrivals) {
		s.refuseArrivals() // shutting down: nobody else will answer them
	}
	return <-r.done
}

// admitArrivals admits the waiting arrivals until none is left.
func (s *Server) admitArrivals() {
	for {
		waiting, ok := s.arrivals.all()
		if !ok {
			return
		}
		for len(waiting) > 0 {
			var batch []arrivalRequest
			batch, waiting = distinctArrivals(waiting)
			s.admitBatch(batch)
		}
	}
}

// admitBatch admits batch in one transaction and answers each request.
func (s *Server) admitBatch(batch []arrivalRequest) {
	reqs := make([]store.ArrivalRequest, len(batch))
	for i, r := range batch {
		reqs[i] = r.ArrivalRequest
	}
	ctx, cancel := s.work.context(s.cfg.CriticalTimeout)
	defer cancel()
	results, err := s.db.arriveByTransfers(ctx, reqs)
	for i, r := range batch {
		if err != nil {
			r.done <- store.ArrivalResult{Err: err}
			continue
		}
		r.done <- results[i]
	}
}

// refuseArrivals answers every waiting arrival that the map stops.
func (s *Server) refuseArrivals() {
	for {
		waiting, ok := s.arrivals.all() // until the queue is idle, so the next arrival comes here too
		if !ok {
			return
		}
		for _, r := range waiting {
			r.done <- store.ArrivalResult{Err: fmt.Errorf("the map is shutting down: %w", context.Canceled)}
		}
	}
}

// distinctArrivals splits off a batch that names each transfer and each
// character once, as one transaction must; the rest wait for the next.
// Two arrivals of one character at once (a replayed or raced ticket) are
// rare and settled in turn, as they were one by one.
func distinctArrivals(waiting []arrivalRequest) (batch, rest []arrivalRequest) {
	transfers := make(map[string]bool, len(waiting))
	characters := make(map[string]bool, len(waiting))
	for _, r := range waiting {
		if transfers[r.TransferID] || characters[r.CharacterID] {
			rest = append(rest, r)
			continue
		}
		transfers[r.TransferID], characters[r.CharacterID] = true, true
		batch = append(batch, r)
	}
	return batch, rest
}
