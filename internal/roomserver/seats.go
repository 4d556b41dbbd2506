package roomserver

import (
	"crypto/rand"
	"encoding/base64"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/store"
	"github.com/roomkeeper/roomkeeper/internal/token"
)

// seat is a player's place in the world. It outlives its connection by the
// resume grace, so a client that drops can come back to the same entity.
type seat struct {
	player    uint32
	user      string
	character string
	// id names the seat for its whole life on this pod, across resumes
	// (a resume token carries it): critical event ids derive from it. gen
	// counts the seat's attachments: a resume token is issued for one,
	// and a resume starts the next, so a token works once.
	id  string
	gen uint32
	// refreshed is when the attached client last got a resume token.
	refreshed time.Time
	// restoring is set on a seat a resume token brings back from the
	// database, on a pod that did not hold it; restoredEpoch is the lease
	// epoch the token names (store.ResumeLease).
	restoring     bool
	restoredEpoch int64
	// lastSeq is the last command seq the server handled for this seat.
	lastSeq uint32
	// played is when the seat last played (unix nanoseconds): seated, or
	// an input or a command; see Server.ActivePlayers.
	played atomic.Int64
	// authority is the character's authority lease, when persisted: set at
	// admission and when an undone transfer takes the character back (on
	// a goroutine of its own), while the lease keeper renews it and resume
	// tokens name its epoch. Read it with lease.
	authority atomic.Pointer[store.Lease]
	// worldActions runs the seat's attacks and door toggles in order.
	worldActions actionQueue
	// inFlight counts critical actions waiting for their commit; critical
	// tracks the same actions so whoever ends the seat (a transfer, a new
	// join of the character, the grace running out, shutdown) can wait for
	// them to end; actions admits them (see beginAction).
	inFlight atomic.Int32
	critical sync.WaitGroup
	actions  actionGate
	// party is the ticket's party: instanced maps are shared by party.
	party string
	// transfer is set when the seat came through a portal: the transfer's
	// id and the map it came from; returned when it came back to the
	// source after the destination could not take it.
	transfer, fromMap string
	returned          bool
	// handedOver is set when the transfer came from this map's pod that
	// this one replaces (a handover): the player stays where it stood.
	handedOver bool
	// transferring is set from portal.enter until the transfer is decided.
	transferring atomic.Bool
	// violationLogged is when (unix ns) a refused action was last logged.
	violationLogged atomic.Int64

	session  *session    // nil while detached
	grace    *time.Timer // running while detached
	detached time.Time   // when the session went, while detached
}

// lease is the character's authority lease; zero when it has none (a
// guest, a map without a database).
func (st *seat) lease() store.Lease {
	if l := st.authority.Load(); l != nil {
		return *l
	}
	return store.Lease{}
}

// setLease records the character's authority lease.
func (st *seat) setLease(l store.Lease) { st.authority.Store(&l) }

// isGuest reports whether the seat's player is a disposable guest.
func (st *seat) isGuest() bool { return strings.HasPrefix(st.user, guestPrefix) }

// markPlayed records that the seat played at now (Server.ActivePlayers).
func (st *seat) markPlayed(now time.Time) { st.played.Store(now.UnixNano()) }

// markPlayed records that this client just sent an input or a command.
func (sess *session) markPlayed() { sess.seat.markPlayed(sess.srv.deps.Clock()) }

// seats tracks every seat by id and by character.
type seats struct {
	mu sync.Mutex
	// grace is how long a player's detached seat is kept; guestGrace a
	// guest's, which is shorter: a guest costs nothing to mint.
	grace, guestGrace time.Duration
	release           func(*seat)
	byID              map[string]*seat
	byCharacter       map[string]*seat
	// stopped is set at shutdown: no seat expires after it (the final
	// checkpoint saves them all).
	stopped bool
}

func newSeats(grace, guestGrace time.Duration, release func(*seat)) *seats {
	if guestGrace <= 0 || guestGrace > grace {
		guestGrace = grace
	}
	return &seats{grace: grace, guestGrace: guestGrace, release: release,
		byID: map[string]*seat{}, byCharacter: map[string]*seat{}}
}

// randomToken is an unguessable token: seat ids.
func randomToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return base64.RawURLEncoding.EncodeToString(b)
}

// of returns the seat a character holds here, if any.
func (ss *seats) of(character string) *seat {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.byCharacter[character]
}

// add registers a new seat attached to sess, unless max seats are taken.
// A seat the same character held is returned so the caller can end it: a
// character plays in one place. A full map makes room by releasing the
// guest seat detached longest (returned as bumped, for the caller to
// release): a connected player beats a guest who left, so guests that
// join and drop cannot hold a map full for their grace.
func (ss *seats) add(st *seat, sess *session, max int) (previous, bumped *seat, full bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	previous = ss.byCharacter[st.character]
	taken := len(ss.byID)
	if previous != nil {
		taken--
	}
	if taken >= max {
		if bumped = ss.oldestDetachedGuest(previous); bumped == nil {
			return nil, nil, true
		}
		ss.forget(bumped)
	}
	if previous != nil {
		ss.forget(previous)
	}
	st.session = sess
	ss.byID[st.id] = st
	ss.byCharacter[st.character] = st
	return previous, bumped, false
}

// oldestDetachedGuest is the guest seat detached longest, other than
// except; callers hold mu.
func (ss *seats) oldestDetachedGuest(except *seat) *seat {
	var oldest *seat
	for _, st := range ss.byID {
		if st != except && st.session == nil && st.isGuest() && (oldest == nil || st.detached.Before(oldest.detached)) {
			oldest = st
		}
	}
	return oldest
}

// resumeOutcome is what seats.resume found for a resume token.
type resumeOutcome int

const (
	// resumed: the token's seat is here and now attached to the session.
	resumed resumeOutcome = iota
	// superseded: the character's seat here is another one, or the token
	// is of an attachment resumed already: the token is spent.
	superseded
	// notHere: the character has no seat on this pod (it crashed or
	// drained, and this pod replaced it; or the grace ran out).
	notHere
)

// resume attaches sess to the seat the claims of a resume token name, if
// it is here and the token is of its current attachment, and starts the
// next attachment: a resume token works once. It returns the session that
// held the seat, if one still did (a client that reconnected before the
// server noticed the drop), for the caller to close.
func (ss *seats) resume(claims token.Claims, sess *session) (st *seat, old *session, outcome resumeOutcome) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	st = ss.byCharacter[claims.Character]
	switch {
	case st == nil:
		return nil, nil, notHere
	case st.id != claims.Session || st.gen != claims.Generation || st.user != claims.Subject:
		return nil, nil, superseded
	}
	if st.grace != nil {
		st.grace.Stop()
		st.grace = nil
	}
	st.gen++
	old, st.session = st.session, sess
	return st, old, resumed
}

// attachment is the seat's current attachment and lease epoch, for its
// resume token; it marks the token refreshed.
func (ss *seats) attachment(st *seat, now time.Time) (gen uint32, epoch int64) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	st.refreshed = now
	return st.gen, st.lease().Epoch
}

// generation is the seat's current attachment.
func (ss *seats) generation(st *seat) uint32 {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return st.gen
}

// staleTokens lists the attached seats whose resume token is older than
// a third of their grace, with their sessions: they get a new one.
func (ss *seats) staleTokens(now time.Time) map[*seat]*session {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	out := map[*seat]*session{}
	for _, st := range ss.byID {
		if st.session != nil && now.Sub(st.refreshed) >= ss.graceOf(st)/3 {
			out[st] = st.session
		}
	}
	return out
}

// graceOf is how long st is kept detached (the graces never change, so
// no lock is needed).
func (ss *seats) graceOf(st *seat) time.Duration {
	if st.isGuest() {
		return ss.guestGrace
	}
	return ss.grace
}

// sessionOf is the session attached to the seat now, nil while detached.
func (ss *seats) sessionOf(st *seat) *session {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return st.session
}

// replyTo sends a message to the client attached to st now, if one is.
// Work that ends after its command (a transfer, an attack, a critical
// action) answers whoever holds the seat by then, never the connection
// the command came on: that one may be gone, and the seat resumed on
// another.
func (s *Server) replyTo(st *seat, kind protocol.Kind, payload any) {
	if sess := s.seats.sessionOf(st); sess != nil {
		sess.sendJSON(kind, 0, payload)
	}
}

// refuseTo answers command seq of st with err, as replyTo does; a refusal
// nobody is attached to hear is still counted.
func (s *Server) refuseTo(st *seat, seq uint32, err error) {
	if sess := s.seats.sessionOf(st); sess != nil {
		sess.refuse(seq, err)
		return
	}
	s.metrics.refused.WithLabelValues(string(asProtocolError(err).Code)).Inc()
}

// detach notes that sess, which held st, is gone, and starts the grace.
func (ss *seats) detach(st *seat, sess *session) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if st.session != sess || ss.byID[st.id] != st {
		return // resumed elsewhere, or already released
	}
	st.session, st.detached = nil, time.Now()
	if ss.stopped {
		return
	}
	st.grace = time.AfterFunc(ss.graceOf(st), func() { ss.expire(st) })
}

func (ss *seats) expire(st *seat) {
	ss.mu.Lock()
	if ss.stopped || st.session != nil || ss.byID[st.id] != st {
		ss.mu.Unlock()
		return
	}
	ss.forget(st)
	ss.mu.Unlock()
	ss.release(st)
}

// setLastSeq records the last command handled for the seat.
func (ss *seats) setLastSeq(st *seat, seq uint32) {
	ss.mu.Lock()
	if seq > st.lastSeq {
		st.lastSeq = seq
	}
	ss.mu.Unlock()
}

func (ss *seats) lastSeq(st *seat) uint32 {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return st.lastSeq
}

// forget removes a seat from the indexes; callers hold mu.
func (ss *seats) forget(st *seat) {
	if st.grace != nil {
		st.grace.Stop()
		st.grace = nil
	}
	delete(ss.byID, st.id)
	if ss.byCharacter[st.character] == st {
		delete(ss.byCharacter, st.character)
	}
}

// all returns every seat.
func (ss *seats) all() []*seat {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	out := make([]*seat, 0, len(ss.byID))
	for _, st := range ss.byID {
		out = append(out, st)
	}
	return out
}

// remove forgets a seat at once (evicted); it reports whether it was there.
func (ss *seats) remove(st *seat) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.byID[st.id] != st {
		return false
	}
	ss.forget(st)
	return true
}

// stop cancels every grace timer, and keeps any from starting or
// releasing a seat from now on; used at shutdown. A release that began
// before runs on the server's work, which Shutdown waits for.
func (ss *seats) stop() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.stopped = true
	for _, st := range ss.byID {
		if st.grace != nil {
			st.grace.Stop()
		}
	}
}

// actionGate admits critical actions to a seat until it closes, and
// remembers the results of the last ones by command seq. Whoever ends a
// seat closes its gate and then waits for seat.critical: with the check
// and the count under one lock, no action can start after the wait began,
// and none in flight is cut off from the player it completes on.
type actionGate struct {
	mu      sync.Mutex
	closed  bool
	results map[uint32]*actionResult
}

// keptResults is how many recent actions' results a seat remembers.
const keptResults = 16

// actionResult is the ack of one critical action, once done is closed.
type actionResult struct {
	done chan struct{}
	ack  protocol.Ack
}

func (r *actionResult) finish(ack protocol.Ack) {
	r.ack = ack
	close(r.done)
}

// beginAction starts the critical action of command seq on st. fresh
// means it must run (and call st.critical.Done when its result is in the
// world); otherwise result is that of the same seq run before. A nil
// result means st is closing and admits nothing.
func (st *seat) beginAction(seq uint32) (result *actionResult, fresh bool) {
	g := &st.actions
	g.mu.Lock()
	defer g.mu.Unlock()
	if seq != 0 {
		if r, ok := g.results[seq]; ok {
			return r, false
		}
	}
	if g.closed {
		return nil, false
	}
	st.critical.Add(1)
	result = &actionResult{done: make(chan struct{})}
	if seq == 0 {
		return result, true
	}
	if g.results == nil {
		g.results = map[uint32]*actionResult{}
	}
	if len(g.results) >= keptResults {
		oldest := seq
		for s := range g.results {
			oldest = min(oldest, s)
		}
		delete(g.results, oldest)
	}
	g.results[seq] = result
	return result, true
}

// closeActions refuses new critical actions and waits for those in
// flight to commit or fail and reach the world.
func (st *seat) closeActions() {
	st.actions.mu.Lock()
	st.actions.closed = true
	st.actions.mu.Unlock()
	st.critical.Wait()
}

// reopenActions admits actions again, when what closed them gave up.
func (st *seat) reopenActions() {
	st.actions.mu.Lock()
	st.actions.closed = false
	st.actions.mu.Unlock()
}
