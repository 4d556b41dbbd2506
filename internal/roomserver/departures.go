package roomserver

import (
	"sync"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/token"
)

// departures remember, by seat id, the transfers of the players who left
// this map until their return tickets expire: a client that dropped while
// its transfer was decided resumes into its transfer message, instead of
// into a seat that is gone (docs/protocol.md, Joining and resuming).
type departures struct {
	mu     sync.Mutex
	bySeat map[string]departure
}

// departure is one player's transfer out, as its client must get it.
type departure struct {
	msg             protocol.Transfer
	user, character string
	gen             uint32
	until           time.Time
}

// add records the transfer msg of st, at its attachment gen, until
// until, and forgets those expired at now.
func (d *departures) add(st *seat, gen uint32, msg protocol.Transfer, now, until time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.bySeat == nil {
		d.bySeat = map[string]departure{}
	}
	for id, dep := range d.bySeat {
		if !dep.until.After(now) {
			delete(d.bySeat, id)
		}
	}
	d.bySeat[st.id] = departure{msg: msg, user: st.user, character: st.character, gen: gen, until: until}
}

// take returns, once, the transfer of the seat a resume token names, if
// that seat left through a portal lately and the token is of its last
// attachment.
func (d *departures) take(claims token.Claims, now time.Time) (protocol.Transfer, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	dep, ok := d.bySeat[claims.Session]
	if !ok || dep.user != claims.Subject || dep.character != claims.Character || dep.gen != claims.Generation || !dep.until.After(now) {
		return protocol.Transfer{}, false
	}
	delete(d.bySeat, claims.Session)
	return dep.msg, true
}
