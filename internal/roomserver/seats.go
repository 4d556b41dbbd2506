package roomserver

import (
	"crypto/rand"
	"encoding/base64"
	"sync"
	"sync/atomic"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/store"
)

// seat is a player's place in the world. It outlives its connection by the
// resume grace, so a client that drops can come back to the same entity.
type seat struct {
	player      uint32
	user        string
	character   string
	resumeToken string
	// lastSeq is the last command seq the server handled for this seat.
	lastSeq uint32
	// lease is the character's authority lease, when persisted.
	lease store.Lease
	// inFlight counts critical actions waiting for their commit; critical
	// tracks the same actions so a transfer can wait for them to end.
	inFlight atomic.Int32
	critical sync.WaitGroup
	// party is the ticket's party: instanced maps are shared by party.
	party string
	// transfer is set when the seat came through a portal: the transfer's
	// id and the map it came from; returned when it came back to the
	// source after the destination could not take it.
	transfer, fromMap string
	returned          bool
	// transferring is set from portal.enter until the transfer is decided.
	transferring atomic.Bool

	session *session    // nil while detached
	grace   *time.Timer // running while detached
}

// seats tracks every seat by resume token and by character.
type seats struct {
	mu          sync.Mutex
	grace       time.Duration
	release     func(*seat)
	byToken     map[string]*seat
	byCharacter map[string]*seat
}

func newSeats(grace time.Duration, release func(*seat)) *seats {
	return &seats{grace: grace, release: release, byToken: map[string]*seat{}, byCharacter: map[string]*seat{}}
}

func newResumeToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return base64.RawURLEncoding.EncodeToString(b)
}

// add registers a new seat attached to sess, unless max seats are taken.
// A seat the same character held is returned so the caller can end it: a
// character plays in one place.
func (ss *seats) add(st *seat, sess *session, max int) (previous *seat, full bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	previous = ss.byCharacter[st.character]
	taken := len(ss.byToken)
	if previous != nil {
		taken--
	}
	if taken >= max {
		return nil, true
	}
	if previous != nil {
		ss.forget(previous)
	}
	st.session = sess
	ss.byToken[st.resumeToken] = st
	ss.byCharacter[st.character] = st
	return previous, false
}

// resume attaches sess to the seat of token. It returns the seat and the
// session that held it, if one still did (a client that reconnected before
// the server noticed the drop), for the caller to close.
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
	old, st.session = st.session, sess
	return st, old, true
}

// detach notes that sess, which held st, is gone, and starts the grace.
func (ss *seats) detach(st *seat, sess *session) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if st.session != sess || ss.byToken[st.resumeToken] != st {
		return // resumed elsewhere, or already released
	}
	st.session = nil
	st.grace = time.AfterFunc(ss.grace, func() { ss.expire(st) })
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
