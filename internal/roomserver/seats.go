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
)

// seat is a player's place in the world. It outlives its connection by the
// resume grace, so a client that drops can come back to the same entity.
type seat struct {
	player    uint32
	user      string
	character string
	// id names the seat for its whole life, across resumes: critical event
	// ids derive from it. resumeToken changes on every resume.
	id          string
	resumeToken string
	// lastSeq is the last command seq the server handled for this seat.
	lastSeq uint32
	// lease is the character's authority lease, when persisted.
	lease store.Lease
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
	// transferring is set from portal.enter until the transfer is decided.
	transferring atomic.Bool
	// violationLogged is when (unix ns) a refused action was last logged.
	violationLogged atomic.Int64

	session  *session    // nil while detached
	grace    *time.Timer // running while detached
	detached time.Time   // when the session went, while detached
}

// isGuest reports whether the seat's player is a disposable guest.
func (st *seat) isGuest() bool { return strings.HasPrefix(st.user, guestPrefix) }

// seats tracks every seat by resume token and by character.
type seats struct {
	mu sync.Mutex
	// grace is how long a player's detached seat is kept; guestGrace a
	// guest's, which is shorter: a guest costs nothing to mint.
	grace, guestGrace time.Duration
	release           func(*seat)
	byToken           map[string]*seat
	byCharacter       map[string]*seat
}

func newSeats(grace, guestGrace time.Duration, release func(*seat)) *seats {
	if guestGrace <= 0 || guestGrace > grace {
		guestGrace = grace
	}
	return &seats{grace: grace, guestGrace: guestGrace, release: release,
		byToken: map[string]*seat{}, byCharacter: map[string]*seat{}}
}

// randomToken is an unguessable token: resume tokens and seat ids.
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
	taken := len(ss.byToken)
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
	ss.byToken[st.resumeToken] = st
	ss.byCharacter[st.character] = st
	return previous, bumped, false
}

// oldestDetachedGuest is the guest seat detached longest, other than
// except; callers hold mu.
func (ss *seats) oldestDetachedGuest(except *seat) *seat {
	var oldest *seat
	for _, st := range ss.byToken {
		if st != except && st.session == nil && st.isGuest() && (oldest == nil || st.detached.Before(oldest.detached)) {
			oldest = st
		}
	}
	return oldest
}

// resume attaches sess to the seat of token and gives the seat a new
// token: a resume token works once. It returns the seat and the session
// that held it, if one still did (a client that reconnected before the
// server noticed the drop), for the caller to close.
func (ss *seats) resume(token string, sess *session) (st *seat, old *session, ok bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	st = ss.byToken[token]
	if st == nil {
		return nil, nil, false
	}
	if st.grace != nil {
		st.grace.Stop()
		st.grace = nil
	}
	delete(ss.byToken, token)
	st.resumeToken = randomToken()
	ss.byToken[st.resumeToken] = st
	old, st.session = st.session, sess
	return st, old, true
}

// token is the seat's current resume token.
func (ss *seats) token(st *seat) string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return st.resumeToken
}

// sessionOf is the session attached to the seat now, nil while detached.
func (ss *seats) sessionOf(st *seat) *session {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return st.session
}

// detach notes that sess, which held st, is gone, and starts the grace.
func (ss *seats) detach(st *seat, sess *session) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if st.session != sess || ss.byToken[st.resumeToken] != st {
		return // resumed elsewhere, or already released
	}
	st.session, st.detached = nil, time.Now()
	grace := ss.grace
	if st.isGuest() {
		grace = ss.guestGrace
	}
	st.grace = time.AfterFunc(grace, func() { ss.expire(st) })
}

func (ss *seats) expire(st *seat) {
	ss.mu.Lock()
	if st.session != nil || ss.byToken[st.resumeToken] != st {
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
	delete(ss.byToken, st.resumeToken)
	if ss.byCharacter[st.character] == st {
		delete(ss.byCharacter, st.character)
	}
}

// all returns every seat.
func (ss *seats) all() []*seat {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	out := make([]*seat, 0, len(ss.byToken))
	for _, st := range ss.byToken {
		out = append(out, st)
	}
	return out
}

// remove forgets a seat at once (evicted); it reports whether it was there.
func (ss *seats) remove(st *seat) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.byToken[st.resumeToken] != st {
		return false
	}
	ss.forget(st)
	return true
}

// stop cancels every grace timer; used at shutdown.
func (ss *seats) stop() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for _, st := range ss.byToken {
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
