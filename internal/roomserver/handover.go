package roomserver

import (
	"context"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
)

// A pod that the operator replaces by handover (docs/operations.md) hands
// every connected player over to the pod that takes its place, through
// the transfer machinery with the same map as destination: the player's
// state is committed and its lease handed over in one transaction, and the
// client gets a transfer message to the new pod's endpoint, where it comes
// back where it stood. The player sees a pause, not a disconnect.

// handoverWorkers bounds the handovers running at once. Each waits for
// the tick twice (the player's record, then its leaving) and for a few
// statements, so they overlap: run one by one, a tick each, 100 players
// would wait seconds. The pod's connection pool bounds the database work.
const handoverWorkers = 128

// sideHandover labels the transfers of a handover in the metrics.
const sideHandover = "handover"

// HandOver stops admitting players and hands every connected one over to
// the pod at endpoint; it returns how many it handed over. A player whose
// handover fails stays, and Shutdown then drains it (its client resumes on
// the new pod). Call Shutdown after it.
func (s *Server) HandOver(ctx context.Context, endpoint string) int {
	s.draining.Store(true)
	dest := Destination{Map: s.cfg.Map, Instance: s.cfg.Instance, Endpoint: endpoint}
	work := make(chan *seat)
	var handed sync.WaitGroup
	var mu sync.Mutex
	count := 0
	for range handoverWorkers {
		handed.Go(func() {
			for st := range work {
				if s.handOverSeat(st, dest) {
					mu.Lock()
					count++
					mu.Unlock()
				}
			}
		})
	}
	for _, st := range s.seats.all() {
		if s.seats.sessionOf(st) == nil {
			continue // detached: saved by Shutdown, resumed on the new pod
		}
		select {
		case work <- st:
		case <-ctx.Done():
		}
	}
	close(work)
	handed.Wait()
	s.deps.Log.Info("Handed players over", "players", count, "to", endpoint)
	return count
}

// handOverSeat moves one player to dest once its critical actions ended,
// and reports whether it went.
func (s *Server) handOverSeat(st *seat, dest Destination) bool {
	if !st.transferring.CompareAndSwap(false, true) {
		return false // on its way through a portal already
	}
	start := time.Now()
	sess := s.seats.sessionOf(st)
	st.closeActions()
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.TransferTimeout)
	defer cancel()
	msg, err := s.handOver(ctx, st, dest)
	if err != nil {
		st.reopenActions()
		st.transferring.Store(false)
		s.metrics.transfers.WithLabelValues(sideHandover, string(asProtocolError(err).Code)).Inc()
		s.deps.Log.Warn("Handing a player over failed; it is drained instead", "character", st.character, "err", err)
		return false
	}
	s.metrics.transfers.WithLabelValues(sideHandover, "ok").Inc()
	s.metrics.transferSeconds.WithLabelValues(sideHandover).Observe(time.Since(start).Seconds())
	if sess != nil {
		sess.sendJSON(protocol.KindTransfer, 0, msg)
		sess.setReason(protocol.EventTransferred)
		sess.closing.Store(true)
		sess.enqueue(outgoing{closeCode: websocket.CloseNormalClosure, closeReason: protocol.EventTransferred})
	}
	return true
}
