package client

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gorilla/websocket"

	"github.com/roomkeeper/roomkeeper/internal/content"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/sim"
)

// historySize is how many decoded snapshots are kept as bases for binary deltas.
const historySize = 64

// keepMessages bounds the acks, errors and events kept in State.
const keepMessages = 256

// State is what the client knows; Snapshot returns a copy.
type State struct {
	// Tick and AckSeq are from the newest snapshot.
	Tick   uint64
	AckSeq uint32
	// Entities in sight, sorted by ID, as the server last described them.
	Entities []protocol.EntityState
	// Self is this player's server position; PredictedX/Y adds the inputs
	// the server has not applied yet.
	Self                   protocol.EntityState
	PredictedX, PredictedY float32
	Pending                int
	Acks                   []protocol.Ack
	Errors                 []protocol.Error
	Events                 []protocol.Event
	// EventCount counts the events received; EventGaps the event ids
	// skipped between two received on one map (events outside the area
	// of interest, or lost: 0 when everything happens in view).
	EventCount, EventGaps int
	lastEventID           uint64
	// Transfer is the newest transfer message; Transfers counts the ones
	// followed to their destination, Returns those that came back to the
	// source because the destination did not take the player.
	Transfer           *protocol.Transfer
	Transfers, Returns int
	// Map and Instance are where the player plays now.
	Map, Instance string
	// Snapshots and Bytes count what arrived; RTTs are ping round trips.
	// MissedSnapshots counts the frames the map made that this client did
	// not get between two it got on one map (a gap the player sees: a
	// slow connection, or a stalled server).
	Snapshots, Bytes, MissedSnapshots int
	// SnapshotAt is when the newest snapshot arrived.
	SnapshotAt time.Time
	RTTs       []time.Duration
	// Inventory is this player's inventory channel as last received:
	// what it carries and wears, their weight, its skills. Its Weight
	// slows the prediction as it slows the server (content.Bag).
	Inventory *protocol.Inventory
	// ResumeToken is the newest resume token (from welcome or session).
	ResumeToken string
	// Reconnects counts the times the client came back by itself after a
	// drop (Options.Reconnect): Resumes by resuming its seat, Rejoins by
	// joining again when the seat could not be resumed.
	Reconnects, Resumes, Rejoins int
	// JoinTries is how many tries Connect's first join took (1: the
	// first try got in; 0: the client was not made by Connect).
	JoinTries int
	// Closed is why the connection ended, nil while it is open (and while
	// the client reconnects).
	Closed error
}

// LastEventID is the id of the newest event received, for hello.lastEvent.
func (s State) LastEventID() uint64 { return s.lastEventID }

// Sees reports whether entity id is in sight.
func (s State) Sees(id uint32) bool {
	_, ok := s.Entity(id)
	return ok
}

// Entity is entity id as last described, and whether it is in sight.
func (s State) Entity(id uint32) (protocol.EntityState, bool) {
	i, ok := slices.BinarySearchFunc(s.Entities, id, func(e protocol.EntityState, id uint32) int { return cmp.Compare(e.ID, id) })
	if !ok {
		return protocol.EntityState{}, false
	}
	return s.Entities[i], true
}

// Snapshot returns a copy of the current state.
func (c *Client) Snapshot() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.state
	s.Entities = slices.Clone(s.Entities)
	s.Acks, s.Errors, s.Events, s.RTTs = slices.Clone(s.Acks), slices.Clone(s.Errors), slices.Clone(s.Events), slices.Clone(s.RTTs)
	s.Pending = len(c.pending)
	return s
}

// WaitFor blocks until cond holds for the state, the connection ends, or
// ctx is done.
func (c *Client) WaitFor(ctx context.Context, cond func(State) bool) (State, error) {
	for {
		c.mu.Lock()
		changed := c.changed
		c.mu.Unlock()
		s := c.Snapshot()
		if cond(s) {
			return s, nil
		}
		if s.Closed != nil {
			return s, fmt.Errorf("connection closed while waiting: %w", s.Closed)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return s, ctx.Err()
		}
	}
}

// update changes the state under the lock and wakes waiters.
func (c *Client) update(fn func(*State)) {
	c.mu.Lock()
	fn(&c.state)
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

// readLoop reads one connection until it ends, or until a transfer moves
// the client to another connection (which gets a readLoop of its own).
func (c *Client) readLoop(conn *websocket.Conn) {
	for {
		kind, data, err := conn.ReadMessage()
		if err != nil {
			if back, why := c.reconnect(conn, err); !back {
				c.update(func(s *State) { s.Closed = explained(cmp.Or(why, err), s.Errors) })
			}
			return
		}
		var t *protocol.Transfer
		if kind == websocket.BinaryMessage {
			err = c.applyBinary(data)
		} else {
			t, err = c.handleText(data)
		}
		if err != nil {
			c.update(func(s *State) { s.Closed = err })
			_ = conn.Close()
			return
		}
		if t != nil && !c.opts.NoFollow && c.follow(conn, *t) {
			return
		}
	}
}

// follow moves the client through a transfer: to the destination with
// its ticket, or, when the destination refuses or does not answer, back
// to the map it came from with the return ticket (travel). When both ways
// fail, Options.Reconnect brings the player back as after a crash (its
// seat is gone: it joins again). It reports whether the client now reads
// another connection.
func (c *Client) follow(old *websocket.Conn, t protocol.Transfer) bool {
	from, ok := c.leave(old)
	if !ok {
		return false
	}
	l, returned, err := c.travel(from, t)
	if err != nil {
		if c.opts.Reconnect == nil {
			c.update(func(s *State) { s.Closed = err })
		} else if ok, why := c.comeBack(from, err); !ok {
			c.update(func(s *State) { s.Closed = cmp.Or(why, err) })
		}
		return true
	}
	c.takeOver(l, func(s *State) { countTransfer(s, returned) })
	return true
}

// travel crosses transfer t from the map at endpoint from: to the
// destination with its ticket, or back to from with the return ticket when
// the destination refuses or does not answer (returned). Refusals of the
// moment (the database down, the map busy, a route the gateway has not
// programmed yet) are tried again: the destination for crossPatience at
// most, the return for the rest of the tickets' life.
func (c *Client) travel(from string, t protocol.Transfer) (l *link, returned bool, err error) {
	expires := time.Now().Add(2 * crossPatience)
	if t.ExpiresAt > 0 {
		expires = time.UnixMilli(t.ExpiresAt)
	}
	l, err = c.cross(t.Endpoint, t.Ticket, minTime(time.Now().Add(crossPatience), expires.Add(-crossReserve)))
	if err == nil {
		return l, false, nil
	}
	l, back := c.cross(from, t.ReturnTicket, expires)
	if back != nil {
		return nil, false, &CrossingError{Map: t.Map, Forward: err, Return: back}
	}
	return l, true, nil
}

// CrossingError is a transfer that failed both ways: the destination did
// not take the player (Forward) and neither did the map it left (Return).
// When the return was refused because the transfer is over (its tickets
// spent or expired: SpentTickets), the character is no longer between
// maps, and joining again is the way back (Reconnect.Rejoin).
type CrossingError struct {
	Map             string
	Forward, Return error
}

func (e *CrossingError) Error() string {
	return fmt.Sprintf("transfer to %s failed (%v) and so did the return (%v)", e.Map, e.Forward, e.Return)
}

func (e *CrossingError) Unwrap() []error { return []error{e.Forward, e.Return} }

// SpentTickets reports whether the map the player left refused its
// return ticket because the transfer is settled (the destination took
// the character, perhaps on a try whose welcome never came back, or the
// transfer was cancelled): no ticket of this transfer admits it any more.
func (e *CrossingError) SpentTickets() bool { return seatGone(e.Return) }

// countTransfer counts a transfer followed to its end in s.
func countTransfer(s *State, returned bool) {
	if returned {
		s.Returns++
	} else {
		s.Transfers++
	}
}

// crossPatience bounds how long a transfer's destination is tried while
// its refusals are of the moment. A new pod behind a Gateway is the
// slowest such destination: the gateway routes to it a few seconds after
// its Service lists it Ready (Traefik applies new configuration at most
// every 2 s). crossReserve of the tickets' life (10 s by default) is kept
// for the way back.
const (
	crossPatience = 6 * time.Second
	crossReserve  = 3 * time.Second
)

// cross says hello with ticket at endpoint, trying again with backoff
// while the refusal is of the moment, until the next try would start past
// until (at least one try is made).
func (c *Client) cross(endpoint, ticket string, until time.Time) (*link, error) {
	for n := 0; ; n++ {
		l, err := connect(context.Background(), endpoint, protocol.Hello{Ticket: ticket}, c.opts, c.Static())
		if err == nil || refusedForGood(err) || c.isClosed() {
			return l, err
		}
		pause := jitteredBackoff(n, defaultBaseDelay, defaultMaxDelay)
		if time.Now().Add(pause).After(until) {
			return l, err
		}
		time.Sleep(pause)
	}
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// leave closes old to move to another connection and returns the
// endpoint it was on; false when the client was closed (nothing to move).
func (c *Client) leave(old *websocket.Conn) (string, bool) {
	c.writeMu.Lock()
	endpoint, closed := c.endpoint, c.closed
	c.writeMu.Unlock()
	if closed {
		return "", false
	}
	_ = old.Close()
	return endpoint, true
}

// takeOver makes l the client's connection, counts the move with count
// and reads l from now on.
func (c *Client) takeOver(l *link, count func(*State)) {
	c.adopt(l)
	c.update(count)
	go c.readLoop(l.conn)
}

// handleText applies one JSON message; a transfer message is returned for
// the read loop to follow.
func (c *Client) handleText(data []byte) (*protocol.Transfer, error) {
	env, err := decodeServer(data)
	if err != nil {
		return nil, err
	}
	switch env.Kind {
	case protocol.KindSnapshot:
		var snap protocol.Snapshot
		if err := decodeLoose(env, &snap); err != nil {
			return nil, err
		}
		return nil, c.applyJSON(snap, len(data))
	case protocol.KindAck:
		var a protocol.Ack
		err = decodeLoose(env, &a)
		c.update(func(s *State) { s.Acks = keep(s.Acks, a) })
	case protocol.KindError:
		var e protocol.Error
		err = decodeLoose(env, &e)
		c.update(func(s *State) { s.Errors = keep(s.Errors, e) })
	case protocol.KindEvent:
		var e protocol.Event
		err = decodeLoose(env, &e)
		c.update(func(s *State) { s.event(e) })
	case protocol.KindTransfer:
		var t protocol.Transfer
		if err := decodeLoose(env, &t); err != nil {
			return nil, err
		}
		c.update(func(s *State) { s.Transfer = &t })
		return &t, nil
	case protocol.KindSession:
		var sn protocol.Session
		err = decodeLoose(env, &sn)
		c.update(func(s *State) { s.ResumeToken = sn.ResumeToken })
	case protocol.KindPong:
		var p protocol.Pong
		err = decodeLoose(env, &p)
		rtt := time.Since(time.Unix(0, int64(p.ClientTime*float64(time.Millisecond))))
		c.update(func(s *State) { s.RTTs = keep(s.RTTs, rtt) })
	}
	return nil, err
}

// explained adds to a close for a policy violation the message of the
// error the server sent before it, which says why ("signed in
// elsewhere"); the close itself carries only the code.
func explained(closed error, errs []protocol.Error) error {
	var ce *websocket.CloseError
	if !errors.As(closed, &ce) || ce.Code != websocket.ClosePolicyViolation || len(errs) == 0 {
		return closed
	}
	if last := errs[len(errs)-1]; string(last.Code) == ce.Text {
		return fmt.Errorf("%w: %s", closed, last.Message)
	}
	return closed
}

func keep[T any](list []T, v T) []T {
	if len(list) >= keepMessages {
		list = list[1:]
	}
	return append(list, v)
}

// applyJSON applies a full or delta JSON snapshot.
func (c *Client) applyJSON(snap protocol.Snapshot, size int) error {
	var base []protocol.EntityState
	if snap.Mode == protocol.ModeDelta {
		b, ok := c.history.get(snap.BaseTick)
		if !ok {
			return fmt.Errorf("delta against tick %d, which this client does not have", snap.BaseTick)
		}
		base = b
	}
	return c.applyEntities(snap.Tick, snap.AckSeq, applyJSONSnapshot(base, snap), snap.Inventory, size)
}

// applyBinary applies a binary snapshot.
func (c *Client) applyBinary(data []byte) error {
	h, err := protocol.PeekBinaryHeader(data)
	if err != nil {
		return err
	}
	var base []protocol.EntityState
	if h.Mode == protocol.BinaryModeDelta {
		b, ok := c.history.get(h.BaseTick)
		if !ok {
			return fmt.Errorf("delta against tick %d, which this client does not have", h.BaseTick)
		}
		base = b
	}
	h, entities, err := protocol.DecodeBinarySnapshot(data, base, nil)
	if err != nil {
		return err
	}
	return c.applyEntities(h.Tick, h.AckSeq, entities, h.Inventory, len(data))
}

// applyEntities installs a snapshot's entities (and inventory, when it
// carries one) and re-predicts this player's position: the server's, plus
// the inputs it has not applied, at the speed its weight allows.
func (c *Client) applyEntities(tick uint64, ackSeq uint32, entities []protocol.EntityState, inv *protocol.Inventory, size int) error {
	c.mu.Lock()
	c.history.put(tick, entities)
	for len(c.pending) > 0 && c.pending[0].Seq <= ackSeq {
		c.pending = c.pending[1:]
	}
	pending := slices.Clone(c.pending)
	c.mu.Unlock()
	c.writeMu.Lock()
	static, speed, dt, me, bag := c.static, c.speed, c.dt, c.welcome.PlayerID, c.welcome.Bag
	// A frame every tickRate/snapshotRate ticks, rounded up: the map's
	// accumulator spaces them by that or one less.
	rate := max(1, c.welcome.SnapshotRate)
	every := uint64(max(1, (c.welcome.TickRate+rate-1)/rate))
	c.writeMu.Unlock()

	c.update(func(s *State) {
		if s.Snapshots > 0 && tick > s.Tick+every {
			s.MissedSnapshots += int((tick-s.Tick)/every - 1)
		}
		s.Tick, s.AckSeq, s.Entities = tick, ackSeq, entities
		if inv != nil {
			s.Inventory = inv
		}
		if s.Inventory != nil {
			speed *= BagRule(bag).SpeedFactor(s.Inventory.Weight)
		}
		s.Snapshots++
		s.Bytes += size
		s.SnapshotAt = time.Now()
		for _, e := range entities {
			if e.ID == me {
				s.Self = e
			}
		}
		s.PredictedX, s.PredictedY = s.Self.X, s.Self.Y
		world := withClosedDoors(static, entities)
		for _, in := range pending {
			s.PredictedX, s.PredictedY = sim.Move(world, s.PredictedX, s.PredictedY, in.X, in.Y, speed*dt)
		}
	})
	return nil
}

// BagRule is the server's carrying rule as the welcome describes it.
func BagRule(b protocol.BagView) content.Bag {
	return content.Bag{Capacity: b.Capacity, MaxWeight: b.MaxWeight, EncumberedAt: b.EncumberedAt, EncumberedSpeed: b.EncumberedSpeed}
}

// Move sends one movement input (a direction of length <= 1) and records it
// for prediction. It returns the input's seq.
func (c *Client) Move(x, y float32) (uint32, error) {
	return c.MoveSteps(x, y, 1)
}

// MoveSteps sends n inputs in one message: n ticks of movement along
// (x, y). The server applies one input per tick, so a client sending less
// often than the tick rate batches the ticks in between. It returns the
// last input's seq.
//
// With the binary codec the inputs go as a binary input frame (up to
// protocol.MaxBinaryInputs at once), their directions quantized as the
// frame carries them, and prediction uses those same values.
func (c *Client) MoveSteps(x, y float32, n int) (uint32, error) {
	binaryInput := c.binaryCodec() && n <= protocol.MaxBinaryInputs
	if binaryInput {
		x, y = protocol.QuantizeDirection(x), protocol.QuantizeDirection(y)
	}
	c.mu.Lock()
	batch := make([]protocol.Input, n)
	for i := range batch {
		c.inputs++
		batch[i] = protocol.Input{Seq: c.inputs, X: x, Y: y}
	}
	c.pending = append(c.pending, batch...)
	c.mu.Unlock()
	var err error
	if binaryInput {
		err = c.sendBinaryInput(batch)
	} else {
		_, err = c.sendEnvelope(protocol.KindCommand, protocol.FeatureMovement, protocol.ActionInput,
			protocol.MovementInput{Inputs: batch})
	}
	return batch[n-1].Seq, err
}

// binaryCodec reports whether the map welcomed this client with the
// binary codec.
func (c *Client) binaryCodec() bool {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	return c.welcome.Codec == protocol.CodecBinary
}

// sendBinaryInput writes inputs as one binary input frame.
func (c *Client) sendBinaryInput(inputs []protocol.Input) error {
	frame := protocol.AppendBinaryInput(nil, c.ackTick(), inputs)
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	return c.conn.WriteMessage(websocket.BinaryMessage, frame)
}

// ackTick is the newest snapshot applied, which every message acknowledges.
func (c *Client) ackTick() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state.Snapshots == 0 {
		return 0
	}
	return c.state.Tick
}

// Ping measures a round trip; the answer lands in State.RTTs.
func (c *Client) Ping() error {
	_, err := c.sendEnvelope(protocol.KindPing, "", "", protocol.Ping{ClientTime: float64(time.Now().UnixNano()) / float64(time.Millisecond)})
	return err
}

// Command sends any command and returns its seq; the answer is an Ack in State.
func (c *Client) Command(feature, action string, payload any) (uint32, error) {
	return c.sendEnvelope(protocol.KindCommand, feature, action, payload)
}

// SendRaw writes a raw frame, for tests of malformed input.
func (c *Client) SendRaw(kind int, data []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	return c.conn.WriteMessage(kind, data)
}

// sendEnvelope writes one message and returns its seq. Every message
// acknowledges the newest snapshot applied, which the server builds its
// deltas against.
func (c *Client) sendEnvelope(kind protocol.Kind, feature, action string, payload any) (uint32, error) {
	ackTick := c.ackTick()
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.seq++
	data, err := encodeEnvelope(kind, c.seq, feature, action, ackTick, payload)
	if err != nil {
		return 0, err
	}
	return c.seq, c.conn.WriteMessage(websocket.TextMessage, data)
}

func encodeEnvelope(kind protocol.Kind, seq uint32, feature, action string, ackTick uint64, payload any) ([]byte, error) {
	raw, err := json.Marshal(payload)
	if err != nil {
		return nil, err
	}
	return json.Marshal(protocol.Envelope{V: protocol.Version, Kind: kind, Seq: seq, Feature: feature, Action: action,
		AckTick: ackTick, Payload: raw})
}

// Do sends a command and waits for its ack: for critical actions (loot
// pickup, drop) that ack comes only after the server's database commit.
func (c *Client) Do(ctx context.Context, feature, action string, payload any) (protocol.Ack, error) {
	seq, err := c.Command(feature, action, payload)
	if err != nil {
		return protocol.Ack{}, err
	}
	return c.AwaitAck(ctx, seq)
}

// AwaitAck waits for the ack of the command sent with seq.
func (c *Client) AwaitAck(ctx context.Context, seq uint32) (protocol.Ack, error) {
	var ack protocol.Ack
	_, err := c.WaitFor(ctx, func(s State) bool {
		for _, a := range s.Acks {
			if a.Seq == seq {
				ack = a
				return true
			}
		}
		return false
	})
	return ack, err
}

// event records an event and counts the ids it skipped.
func (s *State) event(e protocol.Event) {
	s.Events = keep(s.Events, e)
	s.EventCount++
	if e.ID == 0 {
		return // server_shutdown has none
	}
	if s.lastEventID != 0 && e.ID > s.lastEventID+1 {
		s.EventGaps += int(e.ID - s.lastEventID - 1)
	}
	s.lastEventID = max(s.lastEventID, e.ID)
}
