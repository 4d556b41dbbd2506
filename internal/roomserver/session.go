package roomserver

import (
	"bytes"
	"errors"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"golang.org/x/time/rate"

	"github.com/roomkeeper/roomkeeper/internal/clientaddr"
	"github.com/roomkeeper/roomkeeper/internal/fanout"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
)

// A client over its message rate gets rate_limited, at most once per
// rateLimitedEvery; one that stays over it for longer than floodWindow is
// closed with 1008 rate_limited, whatever its rate. The messages the
// limiter still lets through do not end the streak: only a quiet second
// (no refusal for rateLimitedEvery) does.
const (
	floodWindow      = 2 * time.Second
	rateLimitedEvery = time.Second
)

// floodWatch follows one client's refusals; the reader goroutine owns it.
type floodWatch struct {
	since, lastRefused, lastReply time.Time
}

// refused records a message refused at now and says whether to cut the
// connection, and if not whether to answer rate_limited.
func (f *floodWatch) refused(now time.Time) (cut, reply bool) {
	if f.since.IsZero() || now.Sub(f.lastRefused) > rateLimitedEvery {
		f.since = now // a new streak
	}
	f.lastRefused = now
	if now.Sub(f.since) > floodWindow {
		return true, false
	}
	if now.Sub(f.lastReply) >= rateLimitedEvery {
		f.lastReply = now
		return false, true
	}
	return false, false
}

// outgoing is one queued message for the writer.
type outgoing struct {
	data []byte
	// closeCode, when set, makes the writer send a close frame and stop.
	closeCode   int
	closeReason string
}

// session is one WebSocket connection. The reader goroutine (the HTTP
// handler's) parses and handles client messages; the writer goroutine owns
// the connection's writes and builds this client's snapshots.
type session struct {
	srv     *Server
	conn    *websocket.Conn
	limiter *rate.Limiter

	send   chan outgoing
	frames chan struct{}
	quit   chan struct{}
	done   chan struct{}
	once   sync.Once
	writer sync.WaitGroup
	// writerDone is closed when the writer stops, readerDone when the
	// reader does; closing is set once a close frame is queued: the reader
	// then reads on without handling, until the client closes too.
	writerDone chan struct{}
	readerDone chan struct{}
	closing    atomic.Bool

	// player is the seat's entity, 0 until welcome; read by the writer.
	player  atomic.Uint32
	binary  atomic.Bool // the client chose the binary codec
	ackTick atomic.Uint64
	// eventsSent is the id of the last event the writer passed (sent, or
	// outside the client's area); the reader sets it at welcome.
	eventsSent atomic.Uint64
	eventBuf   []*fanout.Event  // writer-owned, reused
	seat       *seat            // reader-owned
	inputs     []protocol.Input // reader-owned: decoded binary inputs, reused
	in         bytes.Buffer     // reader-owned: the message being read, reused
	// address is the client's (clientaddr.Key); counted in the server's
	// unseated connections until hello seats it (uncounted is then set).
	address   netip.Prefix
	uncounted bool
	reason    atomic.Value
	snap      fanout.Snapshotter // writer-owned
}

func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	w.Header().Set(HeaderPod, s.cfg.Pod) // what a handover's probe looks for (AwaitSuccessor)
	if s.draining.Load() {
		http.Error(w, "the server is shutting down", http.StatusServiceUnavailable)
		return
	}
	address := clientaddr.Key(r.RemoteAddr)
	if code, why := s.unseated.acquire(address); code != 0 {
		http.Error(w, why, code)
		return
	}
	conn, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil {
		s.unseated.release(address)
		return // the upgrader has answered the request
	}
	sess := &session{srv: s, conn: conn,
		limiter: rate.NewLimiter(rate.Limit(s.cfg.MessagesPerSecond), s.cfg.MessageBurst),
		send:    make(chan outgoing, s.cfg.SendQueue), frames: make(chan struct{}, 1),
		quit: make(chan struct{}), done: make(chan struct{}),
		writerDone: make(chan struct{}), readerDone: make(chan struct{}),
		snap: fanout.NewSnapshotter(s.cfg.CellSize, s.cfg.Hysteresis)}
	if conn.Subprotocol() != protocol.Subprotocol {
		sess.writeCloseNow(websocket.CloseProtocolError, "subprotocol "+protocol.Subprotocol+" required")
		_ = conn.Close()
		s.unseated.release(address)
		return
	}
	sess.address = address
	if !s.addSession(sess) { // Shutdown began meanwhile
		sess.writeCloseNow(websocket.CloseGoingAway, protocol.EventServerShutdown)
		_ = conn.Close()
		s.unseated.release(address)
		return
	}
	sess.writer.Add(1)
	go sess.writeLoop()
	sess.readLoop()
}

// readLoop reads until the connection fails, then ends the session. Once
// a close frame is queued, what the client sends is read and dropped:
// nothing it says then is handled, but the connection is not closed with
// unread data, which would reset it (see lingerForClient).
func (sess *session) readLoop() {
	defer sess.end()
	cfg := sess.srv.cfg
	sess.conn.SetReadLimit(protocol.MaxMessageBytes)
	_ = sess.conn.SetReadDeadline(time.Now().Add(cfg.HelloTimeout))
	sess.conn.SetPongHandler(func(string) error {
		if sess.seat == nil { // before hello nothing extends the hello timeout
			return nil
		}
		return sess.conn.SetReadDeadline(time.Now().Add(cfg.IdleTimeout))
	})
	var flood floodWatch
	var extended time.Time // when the read deadline was last pushed back
	for {
		kind, data, err := sess.readMessage()
		if err != nil {
			reason := readFailure(err)
			if reason == "idle_timeout" { // say so, in case the client is still there
				sess.writeCloseNow(websocket.ClosePolicyViolation, reason)
			}
			sess.setReason(reason)
			return
		}
		if sess.closing.Load() {
			continue
		}
		// Pushing the deadline back costs a timer update; a sixteenth of
		// the idle timeout late is close enough, and spares one a message.
		if now := time.Now(); sess.seat != nil && now.Sub(extended) >= cfg.IdleTimeout/16 {
			_ = sess.conn.SetReadDeadline(now.Add(cfg.IdleTimeout))
			extended = now
		}
		if !sess.limiter.Allow() {
			cut, reply := flood.refused(time.Now())
			if cut {
				sess.closeWith(string(protocol.CodeRateLimited), "flood")
				continue
			}
			if reply {
				sess.refuse(0, protocol.Errorf(protocol.CodeRateLimited, "slow down: at most %v messages per second", cfg.MessagesPerSecond))
			}
			continue
		}
		sess.handle(kind, data)
	}
}

// readMessage reads the next message into the session's reused buffer:
// the data is good until the next call, and nothing keeps it longer (JSON
// payloads are copied as they are decoded).
func (sess *session) readMessage() (int, []byte, error) {
	kind, r, err := sess.conn.NextReader()
	if err != nil {
		return 0, nil, err
	}
	sess.in.Reset()
	if _, err := sess.in.ReadFrom(r); err != nil {
		return 0, nil, err
	}
	return kind, sess.in.Bytes(), nil
}

// handle processes one client message. Before a welcome, anything but a
// good hello is a refused hello: error and close. After it, a bad frame is
// answered and the connection stays.
func (sess *session) handle(kind int, data []byte) {
	if kind == websocket.BinaryMessage && sess.seat != nil && sess.binary.Load() {
		sess.handleBinaryInput(data)
		return
	}
	env, err := decodeFrame(kind, data)
	switch {
	case err != nil && sess.seat == nil:
		sess.refuseHello(err)
		return
	case err != nil:
		sess.refuse(0, err)
		return
	}
	if env.AckTick > 0 {
		sess.ackTick.Store(env.AckTick)
	}
	if sess.seat == nil {
		sess.handleHello(env)
		return
	}
	switch env.Kind {
	case protocol.KindPing:
		sess.handlePing(env)
	case protocol.KindCommand:
		sess.markPlayed()
		sess.handleCommand(env)
	default:
		sess.refuse(0, protocol.Errorf(protocol.CodeBadRequest, "%s is only valid as the first message", env.Kind))
	}
}

func decodeFrame(kind int, data []byte) (protocol.Envelope, error) {
	if kind != websocket.TextMessage {
		return protocol.Envelope{}, protocol.Errorf(protocol.CodeBadRequest, "messages are JSON text frames (binary ones only movement inputs, with the binary codec)")
	}
	return protocol.DecodeEnvelope(data)
}

// refuse answers a message with an error: an ack for a command (pass its
// seq), an error message for anything else (pass 0).
func (sess *session) refuse(seq uint32, err error) {
	pe := asProtocolError(err)
	sess.srv.metrics.refused.WithLabelValues(string(pe.Code)).Inc()
	if seq != 0 {
		sess.sendJSON(protocol.KindAck, 0, protocol.Ack{Seq: seq, OK: false, Code: pe.Code, Message: pe.Message})
		return
	}
	sess.sendJSON(protocol.KindError, 0, protocol.Error{Code: pe.Code, Message: pe.Message})
}

// sendJSON queues a JSON message; a client whose queue is full is too slow
// to keep and is disconnected rather than waited for.
func (sess *session) sendJSON(kind protocol.Kind, seq uint32, payload any) {
	data, err := sess.srv.cfg.marshal(kind, seq, payload)
	if err != nil { // a bug: the client misses this message, and the log says which
		sess.srv.deps.Log.Error("Encoding a message failed; not sent", "kind", kind, "err", err)
		return
	}
	sess.enqueue(outgoing{data: data})
}

func (sess *session) enqueue(m outgoing) {
	select {
	case sess.send <- m:
	case <-sess.quit:
	default:
		sess.setReason("slow_client")
		sess.kill()
	}
}

// closeWith sends an error and then a policy-violation close frame, after
// what is queued.
func (sess *session) closeWith(errCode, message string) {
	sess.sendErrorAndClose(websocket.ClosePolicyViolation, protocol.Code(errCode), message)
}

// closeToRetry tells the client why it cannot stay now, and closes with
// 1013 (try again later): a client that reconnects by itself comes back.
func (sess *session) closeToRetry(errCode protocol.Code, message string) {
	sess.sendErrorAndClose(websocket.CloseTryAgainLater, errCode, message)
}

// sendErrorAndClose sends an error and then a close frame of closeCode
// with the error's code as its reason, after what is queued.
func (sess *session) sendErrorAndClose(closeCode int, errCode protocol.Code, message string) {
	sess.sendJSON(protocol.KindError, 0, protocol.Error{Code: errCode, Message: message})
	sess.setReason(string(errCode))
	sess.closing.Store(true)
	sess.enqueue(outgoing{closeCode: closeCode, closeReason: string(errCode)})
}

// goAway tells the client why the server is closing and closes.
func (sess *session) goAway(ev protocol.Event) {
	sess.sendJSON(protocol.KindEvent, 0, ev)
	sess.setReason(ev.Type)
	sess.closing.Store(true)
	sess.enqueue(outgoing{closeCode: websocket.CloseGoingAway, closeReason: ev.Type})
}

// notifyFrame wakes the writer for a new frame; it never blocks the tick.
func (sess *session) notifyFrame() {
	select {
	case sess.frames <- struct{}{}:
	default: // the writer has not taken the previous frame yet: it will read the newest
	}
}

func (sess *session) setReason(reason string) {
	sess.reason.CompareAndSwap(nil, reason)
}

// kill closes the connection at once; both goroutines then end.
func (sess *session) kill() {
	sess.once.Do(func() { close(sess.quit) })
	_ = sess.conn.Close()
}

// end runs when the reader stops: it stops the writer, frees the seat for
// resume and records why the connection ended.
// seated stops counting the connection as one waiting to say hello.
func (sess *session) seated() {
	if !sess.uncounted {
		sess.uncounted = true
		sess.srv.unseated.release(sess.address)
	}
}

func (sess *session) end() {
	close(sess.readerDone)
	sess.seated()            // counted no more either way
	if sess.closing.Load() { // let the writer send the error and the close frame
		select {
		case <-sess.writerDone:
		case <-time.After(sess.srv.cfg.WriteTimeout):
		}
	}
	sess.once.Do(func() { close(sess.quit) })
	sess.writer.Wait()
	sess.snap.Close() // the writer, its owner, is done
	_ = sess.conn.Close()
	srv := sess.srv
	srv.removeSession(sess)
	if sess.seat != nil {
		srv.seats.detach(sess.seat, sess)
		srv.checkpointSeat(sess.seat)
	}
	reason, _ := sess.reason.Load().(string)
	if reason == "" {
		reason = "closed"
	}
	srv.metrics.disconnects.WithLabelValues(reason).Inc()
	close(sess.done)
}

func readFailure(err error) string {
	var ce *websocket.CloseError
	switch {
	case errors.Is(err, websocket.ErrReadLimit):
		return "message_too_big"
	case errors.As(err, &ce):
		return "client_closed"
	default:
		var ne interface{ Timeout() bool }
		if errors.As(err, &ne) && ne.Timeout() {
			return "idle_timeout"
		}
		return "connection_lost"
	}
}

// writeLoop owns the connection's writes: queued messages, snapshots when a
// frame arrives, and pings. Whatever ends it closes the connection, so
// the reader ends too: a connection is never left without a writer.
func (sess *session) writeLoop() {
	defer sess.writer.Done()
	defer close(sess.writerDone)
	defer sess.kill()
	ping := time.NewTicker(sess.srv.cfg.PingInterval)
	defer ping.Stop()
	for {
		select {
		case m := <-sess.send:
			if !sess.writeOutgoing(m) {
				return
			}
		case <-sess.frames:
			if !sess.writeSnapshot() {
				return
			}
		case <-ping.C:
			if sess.conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(sess.srv.cfg.WriteTimeout)) != nil {
				sess.kill()
				return
			}
		case <-sess.quit:
			return
		}
	}
}

func (sess *session) writeOutgoing(m outgoing) bool {
	if m.closeCode != 0 {
		sess.writeCloseNow(m.closeCode, m.closeReason)
		sess.finishSending()
		sess.lingerForClient()
		sess.kill()
		return false
	}
	return sess.write(websocket.TextMessage, m.data, sentControl)
}

func (sess *session) write(messageType int, data []byte, kind sentKind) bool {
	_ = sess.conn.SetWriteDeadline(time.Now().Add(sess.srv.cfg.WriteTimeout))
	if err := sess.conn.WriteMessage(messageType, data); err != nil {
		sess.setReason("write_failed")
		sess.kill()
		return false
	}
	sent := &sess.srv.metrics.sent[kind]
	sent.bytes.Add(float64(len(data)))
	sent.messages.Inc()
	return true
}

// finishSending half-closes the connection after the close frame: the
// client, and a proxy in front (Traefik, like httputil.ReverseProxy,
// passes a half-close on), sees the end of the stream after every frame
// before it, while the server still reads until the client closes too.
func (sess *session) finishSending() {
	if conn, ok := sess.conn.NetConn().(interface{ CloseWrite() error }); ok {
		_ = conn.CloseWrite()
	}
}

// lingerForClient waits, after the close frame, until the reader has seen
// the client close (or the connection fail), for WriteTimeout at most:
// as long as a client is given to take a write, since a client still
// reading its backlog answers only once it reaches the close frame.
// Closing before that would leave the client's last messages unread, and
// a socket closed with unread data is reset, not shut down: a proxy in
// front then sees the reset and may drop the connection to the client
// before it has passed on the frames before it, the transfer or the error
// that says why (the client sees 1006). A client that neither closes nor
// stops talking is cut then.
func (sess *session) lingerForClient() {
	linger := time.NewTimer(sess.srv.cfg.WriteTimeout)
	defer linger.Stop()
	select {
	case <-sess.readerDone:
	case <-sess.quit:
	case <-linger.C:
	}
}

func (sess *session) writeCloseNow(code int, reason string) {
	msg := websocket.FormatCloseMessage(code, reason)
	_ = sess.conn.WriteControl(websocket.CloseMessage, msg, time.Now().Add(sess.srv.cfg.WriteTimeout))
}
