// Package client is the Go client of the room-server protocol: roomctl, the
// end-to-end tests and the benchmarks play through it. It keeps the view a
// game client would: the entities in sight, its own predicted position
// (pending inputs replayed on top of each acknowledged server position), and
// the static map, rebuilt from the welcome's MapConfig and checked against
// the server's hash.
package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/roomkeeper/roomkeeper/internal/mapgen"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
)

// ServerError is an error the server answered with.
type ServerError struct {
	Code    protocol.Code
	Message string
}

func (e *ServerError) Error() string { return string(e.Code) + ": " + e.Message }

// ErrMapMismatch means the map this client generated from the welcome's
// MapConfig is not the server's: playing would desynchronise, so Dial refuses.
var ErrMapMismatch = errors.New("the static map built here differs from the server's")

// Options tune a connection.
type Options struct {
	// Codec is "json" (default) or "binary" for snapshots.
	Codec string
	// Header is sent with the WebSocket handshake (Origin, say).
	Header http.Header
	// HandshakeTimeout bounds the dial and the wait for welcome.
	HandshakeTimeout time.Duration
}

// Client is one player's connection.
type Client struct {
	conn    *websocket.Conn
	welcome protocol.Welcome
	static  *mapgen.World
	speed   float32
	dt      float32

	writeMu sync.Mutex
	seq     uint32 // envelope seq

	mu      sync.Mutex
	state   State
	changed chan struct{}
	inputs  uint32 // movement input seq
	pending []protocol.Input
	history snapshotHistory
}

// Dial connects to a map's endpoint and says hello with ticket or resume
// token. It returns once the server has welcomed the player.
func Dial(ctx context.Context, endpoint string, hello protocol.Hello, opts Options) (*Client, error) {
	if opts.HandshakeTimeout == 0 {
		opts.HandshakeTimeout = 10 * time.Second
	}
	if opts.Codec != "" {
		hello.Codec = opts.Codec
	}
	ctx, cancel := context.WithTimeout(ctx, opts.HandshakeTimeout)
	defer cancel()
	dialer := websocket.Dialer{Subprotocols: []string{protocol.Subprotocol}, HandshakeTimeout: opts.HandshakeTimeout}
	conn, resp, err := dialer.DialContext(ctx, endpoint, opts.Header)
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("dialing %s: %w", endpoint, err)
	}
	c := &Client{conn: conn, changed: make(chan struct{})}
	if err := c.handshake(ctx, hello); err != nil {
		_ = conn.Close()
		return nil, err
	}
	go c.readLoop()
	return c, nil
}

// handshake sends hello and reads until welcome or error.
func (c *Client) handshake(ctx context.Context, hello protocol.Hello) error {
	if _, err := c.sendEnvelope(protocol.KindHello, "", "", hello); err != nil {
		return err
	}
	if deadline, ok := ctx.Deadline(); ok {
		_ = c.conn.SetReadDeadline(deadline)
	}
	defer func() { _ = c.conn.SetReadDeadline(time.Time{}) }()
	for {
		kind, data, err := c.conn.ReadMessage()
		if err != nil {
			return fmt.Errorf("waiting for welcome: %w", err)
		}
		if kind != websocket.TextMessage {
			continue
		}
		env, err := decodeServer(data)
		if err != nil {
			return err
		}
		switch env.Kind {
		case protocol.KindError:
			return serverError(env)
		case protocol.KindWelcome:
			return c.accept(env)
		}
	}
}

// accept checks the welcome and rebuilds the static map.
func (c *Client) accept(env protocol.Envelope) error {
	if err := decodeLoose(env, &c.welcome); err != nil {
		return err
	}
	cfg, err := mapgen.ParseConfig(c.welcome.MapConfig)
	if err != nil {
		return fmt.Errorf("welcome's map config: %w", err)
	}
	if c.static, err = mapgen.Generate(cfg); err != nil {
		return fmt.Errorf("generating the map: %w", err)
	}
	if c.static.Hash != c.welcome.MapHash {
		return fmt.Errorf("%w (here %s, server %s)", ErrMapMismatch, c.static.Hash, c.welcome.MapHash)
	}
	c.speed, c.dt = c.welcome.PlayerSpeed, 1/float32(c.welcome.TickRate)
	c.inputs = c.welcome.LastSeq
	c.state.Tick = c.welcome.Tick
	return nil
}

// Welcome is the server's welcome.
func (c *Client) Welcome() protocol.Welcome { return c.welcome }

// Static is the static map the client built.
func (c *Client) Static() *mapgen.World { return c.static }

// Close closes the connection; the seat is kept for the resume grace.
func (c *Client) Close() error {
	c.writeMu.Lock()
	_ = c.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	c.writeMu.Unlock()
	return c.conn.Close()
}

// Drop cuts the connection without a close frame, as a network failure would.
func (c *Client) Drop() error { return c.conn.UnderlyingConn().Close() }
