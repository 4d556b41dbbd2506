package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/gorilla/websocket"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
)

// Reconnect is how a client comes back by itself after its connection
// drops or its map shuts down (a crash, a drain, a network cut): it
// resumes its seat with hello{resume} (the newest resume token, the last
// command seq sent and the last event received), first on the endpoint it
// played on, then wherever Locate says the map runs now; when the seat
// cannot be resumed (the token expired or was spent), or it left through
// a portal and neither map took it on the transfer's spent tickets, it
// joins again with Rejoin. Tries are spaced by exponential backoff with
// full jitter, so a map's players do not all knock at once. A refusal of
// the player (signed in elsewhere, not allowed) is not retried.
type Reconnect struct {
	// Attempts bounds the tries; 0 means 60.
	Attempts int
	// BaseDelay and MaxDelay shape the backoff: try n waits a random time
	// up to min(MaxDelay, BaseDelay * 2^n). 0 means 200 ms and 2 s: the
	// defaults try for about a minute (a map restarting on a busy node,
	// or its new pod pulling its image, is found; past the resume token's
	// life of 30 s the player joins again), and a map that is back is
	// found within 2 s.
	BaseDelay, MaxDelay time.Duration
	// Locate finds the endpoint the map runs at now (the join API's
	// resume call); used from the third try on. Nil keeps the endpoint.
	Locate func(ctx context.Context, resumeToken string) (endpoint string, err error)
	// Rejoin gets a new join ticket and its endpoint (the join API's
	// join); nil gives up when the seat cannot be resumed.
	Rejoin func(ctx context.Context) (endpoint, ticket string, err error)
}

// sameEndpointTries are the tries made on the old endpoint before Locate:
// a map restarted in place (same host port or route) is back there.
const sameEndpointTries = 2

func (r *Reconnect) attempts() int {
	if r.Attempts > 0 {
		return r.Attempts
	}
	return 60
}

// delay is the jittered wait before try n.
func (r *Reconnect) delay(n int) time.Duration {
	base, most := r.BaseDelay, r.MaxDelay
	if base <= 0 {
		base = defaultBaseDelay
	}
	if most <= 0 {
		most = defaultMaxDelay
	}
	return jitteredBackoff(n, base, most)
}

// The backoff of reconnects and transfer tries when not set.
const (
	defaultBaseDelay = 200 * time.Millisecond
	defaultMaxDelay  = 2 * time.Second
)

// jitteredBackoff is the wait before try n: a random time ("full jitter")
// up to min(most, base * 2^n), and at least a millisecond.
func jitteredBackoff(n int, base, most time.Duration) time.Duration {
	ceiling := most
	if n < 30 && base<<n < most {
		ceiling = base << n
	}
	return rand.N(ceiling) + time.Millisecond
}

// reconnect brings the client back after old ended with cause, when
// Options.Reconnect allows; it reports whether the client reads a new
// connection, and otherwise why it gave up (nil: it was closed meanwhile).
func (c *Client) reconnect(old *websocket.Conn, cause error) (bool, error) {
	if c.opts.Reconnect == nil || !recoverable(cause) {
		return false, cause
	}
	endpoint, ok := c.leave(old)
	if !ok {
		return false, nil
	}
	return c.comeBack(endpoint, cause)
}

// comeBack makes the tries of Options.Reconnect from endpoint, the one
// the client played on before cause ended its connection.
func (c *Client) comeBack(endpoint string, cause error) (bool, error) {
	r := c.opts.Reconnect
	for n := range r.attempts() {
		time.Sleep(r.delay(n))
		if c.isClosed() {
			return false, nil
		}
		l, how, err := c.tryReconnect(r, n, &endpoint)
		if err != nil {
			if refusedForGood(err) {
				return false, fmt.Errorf("%w; coming back was refused: %w", cause, err)
			}
			if n == r.attempts()-1 {
				return false, fmt.Errorf("%w; gave up coming back after %d tries, the last: %w", cause, n+1, err)
			}
			continue
		}
		c.takeOver(l, func(s *State) {
			s.Reconnects++
			switch how {
			case rejoined:
				s.Rejoins++
			case resumed:
				s.Resumes++
			default:
				countTransfer(s, how == returned)
			}
		})
		return true, nil
	}
	return false, cause
}

// How a reconnect brought the client back.
type comeback int

const (
	resumed     comeback = iota // the seat, resumed
	rejoined                    // a new seat: the old one was gone
	transferred                 // the seat had left through a portal: its transfer followed
	returned                    // ... and its destination refused it: back with the return ticket
)

// tryReconnect makes try n: a resume at the endpoint (located anew from
// the third try), the transfer of a seat that left through a portal
// meanwhile, or a new join when the seat is gone.
func (c *Client) tryReconnect(r *Reconnect, n int, endpoint *string) (l *link, how comeback, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.HandshakeTimeout)
	defer cancel()
	s := c.Snapshot()
	located := true
	if n >= sameEndpointTries && r.Locate != nil {
		var where string
		where, err = r.Locate(ctx, s.ResumeToken)
		if err == nil {
			*endpoint = where
		}
		located = err == nil
	}
	if located {
		c.writeMu.Lock()
		hello := protocol.Hello{Resume: s.ResumeToken, LastSeq: c.seq, LastEvent: s.lastEventID}
		c.writeMu.Unlock()
		l, err = connect(ctx, *endpoint, hello, c.opts, c.Static())
	}
	var left *Transferred
	if errors.As(err, &left) {
		if l, how, err = c.travelAfterDrop(*endpoint, left.Transfer); !rejoinable(err) {
			return l, how, err
		}
	}
	switch {
	case !rejoinable(err):
		return l, resumed, err
	case r.Rejoin == nil:
		return nil, resumed, err
	}
	// The crossing may have used up the try's time.
	ctx, cancel = context.WithTimeout(context.Background(), c.opts.HandshakeTimeout)
	defer cancel()
	joinEndpoint, ticket, err := r.Rejoin(ctx)
	if err != nil {
		return nil, resumed, err
	}
	if l, err = connect(ctx, joinEndpoint, protocol.Hello{Ticket: ticket}, c.opts, c.Static()); err != nil {
		return nil, resumed, err
	}
	*endpoint = joinEndpoint
	return l, rejoined, nil
}

// travelAfterDrop follows transfer t, which the map at from answered a
// resume with: the player left through a portal while the client was away.
func (c *Client) travelAfterDrop(from string, t protocol.Transfer) (*link, comeback, error) {
	c.update(func(s *State) { s.Transfer = &t })
	l, back, err := c.travel(from, t)
	if back {
		return l, returned, err
	}
	return l, transferred, err
}

func (c *Client) isClosed() bool {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	return c.closed
}

// recoverable reports whether a connection that ended with err is worth
// coming back to: a network failure, or a close that says the server went
// away or will be back; not a refusal, a normal close or a protocol error.
func recoverable(err error) bool {
	var ce *websocket.CloseError
	if !errors.As(err, &ce) {
		return true
	}
	switch ce.Code {
	case websocket.CloseGoingAway, websocket.CloseAbnormalClosure, websocket.CloseInternalServerErr,
		websocket.CloseServiceRestart, websocket.CloseTryAgainLater, 1014: // 1014: bad gateway
		return true
	}
	return false
}

// seatGone reports whether a resume was refused because the seat cannot
// be resumed any more (by the map, or by the join API that was asked
// where the map runs: the token expired): joining again is the way back.
func seatGone(err error) bool {
	var se *ServerError
	var ae *APIError
	switch {
	case errors.As(err, &ae):
		return ae.Status == http.StatusUnauthorized
	case !errors.As(err, &se):
		return false
	}
	switch se.Code {
	case protocol.CodeTokenExpired, protocol.CodeTokenReplayed, protocol.CodeUnauthorized, protocol.CodeWrongMap:
		return true
	}
	return false
}

// rejoinable reports whether a new join brings the player back after
// err: its seat cannot be resumed, or it left through a portal and the
// transfer's tickets are spent (nil: nothing to come back from).
func rejoinable(err error) bool {
	if err == nil {
		return false
	}
	var crossing *CrossingError
	if errors.As(err, &crossing) {
		return crossing.SpentTickets()
	}
	return seatGone(err)
}

// refusedForGood reports whether a try's refusal ends the reconnect: the
// server or the join API refused the player, not the moment (busy,
// database down, not ready, rate limited, unreachable).
func refusedForGood(err error) bool {
	var crossing *CrossingError
	var se *ServerError
	var ae *APIError
	switch {
	case errors.As(err, &crossing):
		// The way back decides: the destination's ticket has long expired
		// when a resume is answered with the transfer again, and the map
		// the player left takes it back once its database answers.
		return refusedForGood(crossing.Return)
	case errors.As(err, &ae):
		return ae.Status == http.StatusBadRequest || ae.Status == http.StatusUnauthorized ||
			ae.Status == http.StatusForbidden || ae.Status == http.StatusNotFound
	case !errors.As(err, &se):
		return false
	}
	switch se.Code {
	case protocol.CodePersistenceUnavailable, protocol.CodeRoomFull, protocol.CodeRateLimited, protocol.CodeMapQuarantined, protocol.CodeInternal,
		protocol.CodeAlreadyTaken: // a transfer, or a crashed pod's lease, holds the character a little longer
		return false
	}
	return true
}
