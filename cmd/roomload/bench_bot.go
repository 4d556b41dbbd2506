package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/token"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

const (
	// latencyRing is how many inputs a lite bot remembers the send time
	// of: far more than the server's backlog (8) and input window (one
	// second of ticks) leave unacknowledged.
	latencyRing = 256
	// dialConcurrency bounds the dials in flight (the server takes at
	// most 256 connections per address that have not said hello).
	dialConcurrency = 32
	// handshakeTimeout bounds one dial and the wait for its welcome.
	handshakeTimeout = 10 * time.Second
	// connectTimeout and connectPerPlayer bound the whole connect phase.
	connectTimeout   = 30 * time.Second
	connectPerPlayer = 20 * time.Millisecond
	// maxFrameBytes is the largest server frame a bot reads.
	maxFrameBytes = 1 << 20
	// ticketTTL is the lifetime of the tickets bots mint for themselves.
	ticketTTL = 10 * time.Second
	// liteReadBuffer holds a crowd's snapshot (4-5 KB) or several small
	// ones, so that one read takes what arrived; liteWriteBuffer an input
	// message.
	liteReadBuffer  = 16 << 10
	liteWriteBuffer = 1 << 10
)

// fleet is the run's players: lite bots and full probes.
type fleet struct {
	cfg      benchConfig
	endpoint string
	signer   *token.Signer
	epoch    time.Time
	// ctx ends the bots' loops; stop cancels it.
	ctx    context.Context
	cancel context.CancelFunc
	// recording is on during the measured window: what arrives then counts.
	recording atomic.Bool
	// stopping is set before the fleet closes its connections, whose
	// errors then are not the bots'.
	stopping               atomic.Bool
	windowStart, windowEnd time.Time
	bots                   []*liteBot
	probes                 []*probe
	wg                     sync.WaitGroup
	stopOnce               sync.Once
}

func newFleet(cfg benchConfig, endpoint string, signer *token.Signer) *fleet {
	ctx, cancel := context.WithCancel(context.Background())
	return &fleet{cfg: cfg, endpoint: endpoint, signer: signer, epoch: time.Now(), ctx: ctx, cancel: cancel,
		bots: make([]*liteBot, cfg.players-cfg.probes), probes: make([]*probe, cfg.probes)}
}

// now is the fleet's clock: nanoseconds since it was made (monotonic).
func (f *fleet) now() int64 { return int64(time.Since(f.epoch)) }

// connect dials every player, dialConcurrency at a time, and starts each
// one's loops as soon as it is welcomed. Players that fail to connect are
// recorded, not fatal; none connecting is.
func (f *fleet) connect(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, connectTimeout+time.Duration(f.cfg.players)*connectPerPlayer)
	defer cancel()
	sem := make(chan struct{}, dialConcurrency)
	var wg sync.WaitGroup
	for i := range f.cfg.players {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			f.giveUp(i, ctx.Err())
			wg.Wait()
			return fmt.Errorf("connecting: %w", context.Cause(ctx))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if i < f.cfg.probes {
				f.probes[i] = f.dialProbe(ctx, i)
			} else {
				f.bots[i-f.cfg.probes] = f.dialBot(ctx, i)
			}
		}()
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("interrupted while connecting: %w", err)
	}
	if f.connected() == 0 {
		return fmt.Errorf("no player connected: %w", f.firstDialError())
	}
	return nil
}

// giveUp records players from i on as never dialed.
func (f *fleet) giveUp(i int, err error) {
	for ; i < f.cfg.players; i++ {
		if i < f.cfg.probes {
			f.probes[i] = &probe{id: i, dialErr: err}
		} else {
			f.bots[i-f.cfg.probes] = &liteBot{f: f, id: i, dialErr: err}
		}
	}
}

// connected counts the players that were welcomed.
func (f *fleet) connected() int {
	n := 0
	for _, b := range f.bots {
		if b != nil && b.dialErr == nil {
			n++
		}
	}
	for _, p := range f.probes {
		if p != nil && p.dialErr == nil {
			n++
		}
	}
	return n
}

func (f *fleet) firstDialError() error {
	for _, b := range f.bots {
		if b != nil && b.dialErr != nil {
			return b.dialErr
		}
	}
	for _, p := range f.probes {
		if p != nil && p.dialErr != nil {
			return p.dialErr
		}
	}
	return errors.New("no dial finished in time")
}

// ticket mints player i's join ticket.
func (f *fleet) ticket(i int) (string, error) {
	raw, _, err := f.signer.Sign(token.Claims{Type: token.TypeJoin, Subject: "bench-user-" + strconv.Itoa(i),
		Character: "bench-" + strconv.Itoa(i), Room: "bench", Map: benchInstance}, ticketTTL)
	return raw, err
}

// retryBusy calls dial with a fresh ticket until it is not refused as busy
// (a refused dial does not use its ticket), backing off, until ctx ends.
func retryBusy[T any](ctx context.Context, f *fleet, i int, dial func(ticket string) (T, error)) (T, error) {
	for backoff := 50 * time.Millisecond; ; backoff = min(2*backoff, time.Second) {
		var zero T
		ticket, err := f.ticket(i)
		if err != nil {
			return zero, err
		}
		v, err := dial(ticket)
		if !errors.Is(err, client.ErrBusy) {
			return v, err
		}
		if sleepCtx(ctx, backoff+rand.N(backoff)) != nil {
			return zero, err
		}
	}
}

// stagger is player i's offset into the input interval, so that the
// players' messages do not all leave at once.
func (f *fleet) stagger(i int) time.Duration {
	return time.Second / time.Duration(f.cfg.inputRate) * time.Duration(i) / time.Duration(f.cfg.players)
}

// startWindow starts the measured window.
func (f *fleet) startWindow() {
	for _, p := range f.probes {
		p.mark(&p.start)
	}
	f.windowStart = time.Now()
	f.recording.Store(true)
}

// endWindow ends the measured window.
func (f *fleet) endWindow() {
	f.recording.Store(false)
	f.windowEnd = time.Now()
	for _, p := range f.probes {
		p.mark(&p.end)
	}
}

// stop ends every player's loops and closes their connections; it returns
// once all have ended. It is idempotent.
func (f *fleet) stop() {
	f.stopOnce.Do(func() {
		f.stopping.Store(true)
		f.cancel()
		for _, b := range f.bots {
			if b != nil && b.conn != nil {
				_ = b.conn.Close() // ends a read or write in progress
			}
		}
		for _, p := range f.probes {
			if p != nil && p.c != nil {
				_ = p.c.Close()
			}
		}
		f.wg.Wait()
	})
}

// failure is err, unless the fleet is stopping (then the error is its own doing).
func (f *fleet) failure(err error) error {
	if f.stopping.Load() {
		return nil
	}
	return err
}

// liteBot is a player that does not decode snapshots: it reads frames,
// counts them and their bytes, peeks at a snapshot's tick and ackSeq,
// acknowledges the newest tick in its inputs and measures how long each
// input waits for the first snapshot that acknowledges it.
type liteBot struct {
	f      *fleet
	id     int
	conn   *websocket.Conn
	binary bool
	// dialErr is why the bot never played.
	dialErr error
	// newest is the newest snapshot tick, which inputs acknowledge.
	newest atomic.Uint64
	// sentAt and sentSeq: when input seq s left, at s % latencyRing.
	sentAt  [latencyRing]atomic.Int64
	sentSeq [latencyRing]atomic.Uint32

	// The reader's, read by the fleet after stop.
	acked        uint32
	snapshots    int
	bytes        int64
	latencies    []uint32 // microseconds
	unmatched    int
	serverErrors map[protocol.Code]int
	badFrames    int
	readErr      error

	// The writer's, read by the fleet after stop.
	inputsSent int // in the window
	writeErr   error
}

// dialBot connects lite bot i and starts its loops.
func (f *fleet) dialBot(ctx context.Context, i int) *liteBot {
	b := &liteBot{f: f, id: i, binary: f.cfg.codec == protocol.CodecBinary}
	type dialed struct {
		conn    *websocket.Conn
		lastSeq uint32
	}
	d, err := retryBusy(ctx, f, i, func(ticket string) (dialed, error) {
		conn, w, err := dialLite(ctx, f.endpoint, ticket, f.cfg.codec)
		return dialed{conn, w.LastSeq}, err
	})
	if err != nil {
		b.dialErr = err
		return b
	}
	b.conn, b.acked = d.conn, d.lastSeq
	b.conn.SetReadLimit(maxFrameBytes)
	f.wg.Add(2)
	go b.readLoop()
	go b.writeLoop(f.stagger(i), d.lastSeq)
	return b
}

// dialLite opens a WebSocket, says hello and waits for the welcome.
func dialLite(ctx context.Context, endpoint, ticket, codec string) (*websocket.Conn, protocol.Welcome, error) {
	var w protocol.Welcome
	ctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	defer cancel()
	dialer := websocket.Dialer{Subprotocols: []string{protocol.Subprotocol}, HandshakeTimeout: handshakeTimeout,
		ReadBufferSize: liteReadBuffer, WriteBufferSize: liteWriteBuffer}
	conn, resp, err := dialer.DialContext(ctx, endpoint, nil)
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err != nil && resp != nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
		return nil, w, fmt.Errorf("dialing: %w (HTTP %d)", client.ErrBusy, resp.StatusCode)
	}
	if err != nil {
		return nil, w, fmt.Errorf("dialing: %w", err)
	}
	if err := helloLite(ctx, conn, ticket, codec, &w); err != nil {
		_ = conn.Close()
		return nil, w, err
	}
	return conn, w, nil
}

func helloLite(ctx context.Context, conn *websocket.Conn, ticket, codec string, w *protocol.Welcome) error {
	payload, err := json.Marshal(protocol.Hello{Ticket: ticket, Codec: codec})
	if err != nil {
		return err
	}
	hello, err := json.Marshal(protocol.Envelope{V: protocol.Version, Kind: protocol.KindHello, Seq: 1, Payload: payload})
	if err != nil {
		return err
	}
	if err := conn.WriteMessage(websocket.TextMessage, hello); err != nil {
		return err
	}
	deadline, _ := ctx.Deadline()
	_ = conn.SetReadDeadline(deadline)
	for {
		kind, data, err := conn.ReadMessage()
		if err != nil {
			return fmt.Errorf("waiting for welcome: %w", err)
		}
		if kind != websocket.TextMessage {
			continue
		}
		var env protocol.Envelope
		if err := json.Unmarshal(data, &env); err != nil {
			return fmt.Errorf("waiting for welcome: %w", err)
		}
		switch env.Kind {
		case protocol.KindError:
			var e protocol.Error
			_ = json.Unmarshal(env.Payload, &e)
			return &client.ServerError{Code: e.Code, Message: e.Message}
		case protocol.KindWelcome:
			if err := json.Unmarshal(env.Payload, w); err != nil {
				return fmt.Errorf("welcome: %w", err)
			}
			return conn.SetReadDeadline(time.Time{})
		}
	}
}

// readLoop reads frames until the connection ends.
func (b *liteBot) readLoop() {
	defer b.f.wg.Done()
	var buf []byte
	for {
		kind, r, err := b.conn.NextReader()
		if err == nil {
			buf, err = readFrame(r, buf[:0])
		}
		if err != nil {
			b.readErr = b.f.failure(err)
			return
		}
		b.frame(kind, buf, b.f.now(), b.f.recording.Load())
	}
}

// readFrame appends a frame's bytes to buf.
func readFrame(r io.Reader, buf []byte) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// frame takes one server frame received at now (fleet clock); rec says
// whether the window is open.
func (b *liteBot) frame(kind int, data []byte, now int64, rec bool) {
	if rec {
		b.bytes += int64(len(data))
	}
	var tick uint64
	var ackSeq uint32
	switch kind {
	case websocket.BinaryMessage:
		h, err := protocol.PeekBinaryHeader(data)
		if err != nil {
			b.badFrames++
			return
		}
		tick, ackSeq = h.Tick, h.AckSeq
	case websocket.TextMessage:
		m, ok := peekJSON(data)
		switch {
		case !ok:
			b.badFrames++
			return
		case m.kind == protocol.KindError:
			if b.serverErrors == nil {
				b.serverErrors = map[protocol.Code]int{}
			}
			b.serverErrors[m.code]++
			return
		case m.kind != protocol.KindSnapshot:
			return
		}
		tick, ackSeq = m.tick, m.ackSeq
	default:
		return
	}
	if rec {
		b.snapshots++
	}
	if tick > b.newest.Load() {
		b.newest.Store(tick)
	}
	b.acknowledged(ackSeq, now, rec)
}

// acknowledged takes a snapshot's ackSeq: every input up to it has now
// been acknowledged, by this snapshot if not by an earlier one.
func (b *liteBot) acknowledged(ackSeq uint32, now int64, rec bool) {
	if ackSeq <= b.acked {
		return
	}
	from := b.acked + 1
	if ackSeq-b.acked > latencyRing {
		b.unmatched += int(ackSeq - b.acked - latencyRing)
		from = ackSeq - latencyRing + 1
	}
	for s := from; s <= ackSeq && s >= from; s++ { // s >= from: stop should s wrap
		slot := s % latencyRing
		if b.sentSeq[slot].Load() != s {
			b.unmatched++
			continue
		}
		if rec {
			b.latencies = append(b.latencies, uint32(max(0, now-b.sentAt[slot].Load())/int64(time.Microsecond)))
		}
	}
	b.acked = ackSeq
}

// writeLoop sends the bot's inputs: inputRate messages a second carrying
// one input per tick, each acknowledging the newest snapshot.
func (b *liteBot) writeLoop(phase time.Duration, lastSeq uint32) {
	defer b.f.wg.Done()
	cfg := b.f.cfg
	if sleepCtx(b.f.ctx, phase) != nil {
		return
	}
	ticker := time.NewTicker(time.Second / time.Duration(cfg.inputRate))
	defer ticker.Stop()
	kind := websocket.TextMessage
	if b.binary {
		kind = websocket.BinaryMessage
	}
	var frame []byte
	inputs := make([]protocol.Input, 0, maxInputsPerMessage(cfg.tickRate, cfg.inputRate))
	seq, envSeq := lastSeq, uint32(1) // the hello was 1
	for msg := 0; ; msg++ {
		select {
		case <-b.f.ctx.Done():
			return
		case <-ticker.C:
		}
		inputs = inputs[:0]
		for range inputsDue(msg, cfg.tickRate, cfg.inputRate) {
			seq++
			x, y := heading(b.id, seq, cfg.tickRate, cfg.walk)
			inputs = append(inputs, protocol.Input{Seq: seq, X: x, Y: y})
		}
		ackTick := b.newest.Load()
		if b.binary {
			frame = protocol.AppendBinaryInput(frame[:0], ackTick, inputs)
		} else {
			envSeq++
			frame = appendJSONInput(frame[:0], envSeq, ackTick, inputs)
		}
		now := b.f.now()
		for _, in := range inputs {
			b.sentAt[in.Seq%latencyRing].Store(now)
			b.sentSeq[in.Seq%latencyRing].Store(in.Seq)
		}
		if b.f.recording.Load() {
			b.inputsSent += len(inputs)
		}
		if err := b.conn.WriteMessage(kind, frame); err != nil {
			b.writeErr = b.f.failure(err)
			return
		}
	}
}

// heading is the direction of player bot's input seq. "stay" walks a
// random heading for a second and back the next, so players stay round
// where they started (a crowd start stays a crowd); "wander" takes a new
// random heading every second, as roomctl bots do.
func heading(bot int, seq uint32, tickRate int, walk string) (x, y float32) {
	second := uint64(seq-1) / uint64(tickRate)
	leg := second
	if walk == "stay" {
		leg = second / 2
	}
	a := 2 * math.Pi * float64(splitmix64(uint64(bot)<<32^leg)>>11) / (1 << 53)
	if walk == "stay" && second%2 == 1 {
		a += math.Pi
	}
	return float32(math.Cos(a)), float32(math.Sin(a))
}

// splitmix64 is a fixed mix of x: a cheap deterministic random per (bot, leg).
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// appendJSONInput appends a movement.input command (docs/protocol.md)
// without going through encoding/json.
func appendJSONInput(buf []byte, seq uint32, ackTick uint64, inputs []protocol.Input) []byte {
	buf = append(buf, `{"v":1,"kind":"command","seq":`...)
	buf = strconv.AppendUint(buf, uint64(seq), 10)
	buf = append(buf, `,"feature":"movement","action":"input"`...)
	if ackTick > 0 {
		buf = append(buf, `,"ackTick":`...)
		buf = strconv.AppendUint(buf, ackTick, 10)
	}
	buf = append(buf, `,"payload":{"inputs":[`...)
	for i, in := range inputs {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, `{"seq":`...)
		buf = strconv.AppendUint(buf, uint64(in.Seq), 10)
		buf = append(buf, `,"x":`...)
		buf = strconv.AppendFloat(buf, float64(in.X), 'f', -1, 32)
		buf = append(buf, `,"y":`...)
		buf = strconv.AppendFloat(buf, float64(in.Y), 'f', -1, 32)
		buf = append(buf, '}')
	}
	return append(buf, "]}}"...)
}

// jsonPeek is what a lite bot reads of a JSON server message.
type jsonPeek struct {
	kind   protocol.Kind
	tick   uint64
	ackSeq uint32
	code   protocol.Code
}

// peekJSON reads a server message's kind and, for a snapshot, its tick and
// ackSeq, for an error its code, by scanning for the keys rather than
// decoding: the envelope's "kind" comes before the payload, and no key
// inside a snapshot's entities is spelled "tick" or "ackSeq".
func peekJSON(data []byte) (jsonPeek, bool) {
	var m jsonPeek
	kind, ok := stringAfter(data, `"kind":"`)
	if !ok {
		return m, false
	}
	m.kind = protocol.Kind(kind)
	payload := bytes.Index(data, []byte(`"payload":`))
	if payload < 0 {
		return m, m.kind != protocol.KindSnapshot && m.kind != protocol.KindError
	}
	body := data[payload:]
	switch m.kind {
	case protocol.KindSnapshot:
		tick, ok1 := numberAfter(body, `"tick":`)
		ackSeq, ok2 := numberAfter(body, `"ackSeq":`)
		if !ok1 || !ok2 || ackSeq > math.MaxUint32 {
			return m, false
		}
		m.tick, m.ackSeq = tick, uint32(ackSeq)
	case protocol.KindError:
		code, ok := stringAfter(body, `"code":"`)
		if !ok {
			return m, false
		}
		m.code = protocol.Code(code)
	}
	return m, true
}

// stringAfter is the JSON string (without escapes) that follows key.
func stringAfter(data []byte, key string) (string, bool) {
	i := bytes.Index(data, []byte(key))
	if i < 0 {
		return "", false
	}
	rest := data[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return "", false
	}
	return string(rest[:j]), true
}

// numberAfter is the unsigned integer that follows key.
func numberAfter(data []byte, key string) (uint64, bool) {
	i := bytes.Index(data, []byte(key))
	if i < 0 {
		return 0, false
	}
	rest := data[i+len(key):]
	j := 0
	for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
		j++
	}
	n, err := strconv.ParseUint(string(rest[:j]), 10, 64)
	return n, err == nil
}

// probe is a full pkg/client player: it decodes every snapshot, predicts
// and reconciles, and checks what it sees, so a run shows the server
// stayed correct under the load the lite bots put on it.
type probe struct {
	id       int
	c        *client.Client
	playerID uint32
	dialErr  error
	// start and end are the client's state at either end of the window.
	start, end client.State
	err        error
	// npcs and attacks are --fight's: the NPCs in view, the attacks sent.
	npcs            []uint32
	attacks, probes int
}

// dialProbe connects probe i and starts its loop.
func (f *fleet) dialProbe(ctx context.Context, i int) *probe {
	p := &probe{id: i, probes: f.cfg.probes}
	p.c, p.dialErr = retryBusy(ctx, f, i, func(ticket string) (*client.Client, error) {
		return client.Dial(ctx, f.endpoint, protocol.Hello{Ticket: ticket},
			client.Options{Codec: f.cfg.codec, HandshakeTimeout: handshakeTimeout})
	})
	if p.dialErr != nil {
		return p
	}
	p.playerID = p.c.Welcome().PlayerID
	f.wg.Add(1)
	go p.run(f, f.stagger(i))
	return p
}

// run moves the probe as the lite bots move, and pings once a second.
func (p *probe) run(f *fleet, phase time.Duration) {
	defer f.wg.Done()
	cfg := f.cfg
	if sleepCtx(f.ctx, phase) != nil {
		return
	}
	move := time.NewTicker(time.Second / time.Duration(cfg.inputRate))
	defer move.Stop()
	ping := time.NewTicker(time.Second)
	defer ping.Stop()
	var strike <-chan time.Time // --fight: an attack a tick
	if cfg.fight {
		t := time.NewTicker(time.Second / time.Duration(cfg.tickRate))
		defer t.Stop()
		strike = t.C
	}
	seq := p.c.Welcome().LastSeq
	for msg := 0; ; {
		select {
		case <-f.ctx.Done():
			return
		case <-strike:
			if err := p.attack(); err != nil {
				p.err = f.failure(err)
				return
			}
		case <-ping.C:
			if err := p.c.Ping(); err != nil {
				p.err = f.failure(err)
				return
			}
		case <-move.C:
			n := inputsDue(msg, cfg.tickRate, cfg.inputRate)
			msg++
			x, y := heading(p.id, seq+1, cfg.tickRate, cfg.walk)
			if cfg.fight {
				x, y = 0, 0 // the crowd stands and fights: every event stays in every probe's view
			}
			last, err := p.c.MoveSteps(x, y, n)
			if err != nil {
				p.err = f.failure(err)
				return
			}
			seq = last
		}
	}
}

// attack hits an NPC in the probe's view, without waiting for the ack
// (refusals, a dummy already down, are part of the load). The probes take
// turns over the NPCs in view, so that they do not all hit the same one.
func (p *probe) attack() error {
	s := p.c.Snapshot()
	p.npcs = p.npcs[:0]
	for _, e := range s.Entities {
		if e.Kind == protocol.EntityNPC && e.HP > 0 {
			p.npcs = append(p.npcs, e.ID)
		}
	}
	if len(p.npcs) == 0 {
		return nil
	}
	p.attacks++
	// Probe i's k-th attack takes the (i + k*probes)-th NPC: in one tick
	// the probes hit different NPCs, and the next tick's block is not the
	// one they just felled.
	target := p.npcs[(p.id+p.attacks*p.probes)%len(p.npcs)]
	_, err := p.c.Command(protocol.FeatureCombat, protocol.ActionAttack, protocol.CombatAttack{Target: target})
	return err
}

// mark records the probe's state into at.
func (p *probe) mark(at *client.State) {
	if p != nil && p.c != nil {
		*at = p.c.Snapshot()
	}
}

// problem is what is wrong with the probe at the end of the window, ""
// when nothing is: it is connected, got snapshots in the window, sees
// itself in them, and was sent no error.
func (p *probe) problem() string {
	switch {
	case p.dialErr != nil:
		return "dial: " + p.dialErr.Error()
	case p.end.Closed != nil:
		return "connection ended: " + p.end.Closed.Error()
	case p.err != nil:
		return p.err.Error()
	case p.end.Snapshots <= p.start.Snapshots:
		return "no snapshot in the window"
	case !p.end.Sees(p.playerID):
		return fmt.Sprintf("its own entity %d is not in its view", p.playerID)
	case len(p.end.Errors) > 0:
		return fmt.Sprintf("server error %s: %s", p.end.Errors[0].Code, p.end.Errors[0].Message)
	}
	return ""
}
