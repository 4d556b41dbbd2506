// Package client is the Go client of the room-server protocol: roomctl, the
// end-to-end tests and the benchmarks play through it. It keeps the view a
// game client would: the entities in sight, its own predicted position
// (pending inputs replayed on top of each acknowledged server position), and
// the static map, rebuilt from the welcome's MapConfig and checked against
// the server's hash.
package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
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

// Transferred answers a resume when the player left through a portal
// while the client was away (its transfer was decided after the connection
// dropped): follow Transfer as if it had come on the old connection. A
// client with Options.Reconnect does so by itself; Dial returns it to a
// caller that resumes by hand.
type Transferred struct {
	Transfer protocol.Transfer
}

func (e *Transferred) Error() string {
	return "the player left through a portal to " + e.Transfer.Map + " meanwhile: follow the transfer"
}

// ErrBusy means the map refused the connection before any hello (too many
// connections waiting to say hello, or shutting down): the ticket was not
// used, and dialing again a little later may work.
var ErrBusy = errors.New("the map is busy")

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
	// TLSConfig is used for wss:// endpoints (a private CA, say); nil uses
	// the system's roots. Without a ClientSessionCache the client keeps
	// one of its own, so its later connections (a transfer, a handover, a
	// reconnect) resume their TLS session instead of a full handshake.
	TLSConfig *tls.Config
	// NetDialContext makes the connection's TCP connection (through a
	// proxy, into a network namespace); nil dials directly.
	NetDialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	// NoFollow leaves a transfer to the caller: the client records the
	// transfer message in State and closes, instead of reconnecting to the
	// destination (or back, should the destination fail).
	NoFollow bool
	// Reconnect, when set, brings the client back by itself after its
	// connection drops or its map shuts down (see Reconnect).
	Reconnect *Reconnect
}

// Client is one player's connection. It follows transfers: when the map
// sends the player through a portal, the client reconnects to the
// destination and carries on there (Welcome, Static and State then
// describe the new map).
type Client struct {
	opts Options

	// writeMu guards the connection and what describes it: a transfer
	// swaps them while the application may be sending.
	writeMu  sync.Mutex
	conn     *websocket.Conn
	endpoint string
	welcome  protocol.Welcome
	static   *mapgen.World
	speed    float32
	dt       float32
	seq      uint32 // envelope seq
	closed   bool   // Close or Drop was called: no transfer is followed

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
	opts.TLSConfig = withSessionCache(opts.TLSConfig)
	l, err := connect(ctx, endpoint, hello, opts, nil)
	if err != nil {
		return nil, err
	}
	// A resumed seat remembers the seqs of its commands: new ones go on
	// after the last sent (protocol.md, "Joining and resuming").
	c := &Client{opts: opts, changed: make(chan struct{}), seq: hello.LastSeq}
	c.adopt(l)
	go c.readLoop(l.conn)
	return c, nil
}

// withSessionCache is config (or the default) with a TLS session cache:
// a handover sends fifty players through one gateway at once, and a
// resumed session spares each the certificate and its signature, on both
// sides.
func withSessionCache(config *tls.Config) *tls.Config {
	if config != nil && config.ClientSessionCache != nil {
		return config
	}
	c := &tls.Config{}
	if config != nil {
		c = config.Clone()
	}
	c.ClientSessionCache = tls.NewLRUClientSessionCache(0)
	return c
}

// link is one welcomed connection to a map.
type link struct {
	conn     *websocket.Conn
	endpoint string
	welcome  protocol.Welcome
	static   *mapgen.World
}

// connect dials endpoint, says hello and waits for the welcome. known is
// the static map the client has, reused when the welcome's hash is its
// (a resume, or a handover to the same map's new pod).
func connect(ctx context.Context, endpoint string, hello protocol.Hello, opts Options, known *mapgen.World) (*link, error) {
	if opts.Codec != "" {
		hello.Codec = opts.Codec
	}
	ctx, cancel := context.WithTimeout(ctx, opts.HandshakeTimeout)
	defer cancel()
	dialer := websocket.Dialer{Subprotocols: []string{protocol.Subprotocol}, HandshakeTimeout: opts.HandshakeTimeout,
		TLSClientConfig: opts.TLSConfig, NetDialContext: opts.NetDialContext}
	conn, resp, err := dialer.DialContext(ctx, endpoint, opts.Header)
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err != nil && resp != nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
		return nil, fmt.Errorf("dialing %s: %w (HTTP %d)", endpoint, ErrBusy, resp.StatusCode)
	}
	if err != nil {
		return nil, fmt.Errorf("dialing %s: %w", endpoint, err)
	}
	l := &link{conn: conn, endpoint: endpoint, static: known}
	if err := l.handshake(ctx, hello); err != nil {
		_ = conn.Close()
		return nil, err
	}
	return l, nil
}

// handshake sends hello and reads until welcome or error.
func (l *link) handshake(ctx context.Context, hello protocol.Hello) error {
	data, err := encodeEnvelope(protocol.KindHello, 1, "", "", 0, hello)
	if err != nil {
		return err
	}
	if err := l.conn.WriteMessage(websocket.TextMessage, data); err != nil {
		return err
	}
	if deadline, ok := ctx.Deadline(); ok {
		_ = l.conn.SetReadDeadline(deadline)
	}
	defer func() { _ = l.conn.SetReadDeadline(time.Time{}) }()
	for {
		kind, data, err := l.conn.ReadMessage()
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
			return l.accept(env)
		case protocol.KindTransfer: // a resume of a seat that left meanwhile
			var t protocol.Transfer
			if err := decodeLoose(env, &t); err != nil {
				return err
			}
			return &Transferred{Transfer: t}
		}
	}
}

// accept checks the welcome and rebuilds the static map: a map this
// client cannot reproduce is refused.
func (l *link) accept(env protocol.Envelope) error {
	if err := decodeLoose(env, &l.welcome); err != nil {
		return err
	}
	if l.static != nil && l.static.Hash == l.welcome.MapHash {
		return nil // the map this client built already
	}
	cfg, err := mapgen.ParseConfig(l.welcome.MapConfig)
	if err != nil {
		return fmt.Errorf("welcome's map config: %w", err)
	}
	if l.static, err = mapgen.Generate(cfg); err != nil {
		return fmt.Errorf("generating the map: %w", err)
	}
	if l.static.Hash != l.welcome.MapHash {
		return fmt.Errorf("%w (here %s, server %s)", ErrMapMismatch, l.static.Hash, l.welcome.MapHash)
	}
	return nil
}

// adopt makes l the client's connection. Prediction starts afresh: the
// inputs sent to the old map are gone with it, and the new map counts
// input seqs from its welcome.
func (c *Client) adopt(l *link) {
	c.writeMu.Lock()
	c.conn, c.endpoint, c.welcome, c.static = l.conn, l.endpoint, l.welcome, l.static
	c.speed, c.dt = l.welcome.PlayerSpeed, 1/float32(l.welcome.TickRate)
	// c.seq runs on across connections, so an ack is never taken for
	// the answer to a command of the same seq sent to the previous map.
	c.seq = max(c.seq, 1, l.welcome.LastSeq) // 1 is the hello
	c.writeMu.Unlock()
	c.mu.Lock()
	c.inputs, c.pending, c.history = l.welcome.LastSeq, nil, snapshotHistory{}
	c.mu.Unlock()
	c.update(func(s *State) {
		s.Tick, s.AckSeq, s.Snapshots, s.Entities = l.welcome.Tick, 0, 0, nil
		s.Self = protocol.EntityState{ID: l.welcome.PlayerID, Kind: protocol.EntityPlayer}
		if s.Instance != l.welcome.Instance {
			s.lastEventID = 0 // a map numbers its own events
		}
		s.Map, s.Instance, s.ResumeToken = l.welcome.Map, l.welcome.Instance, l.welcome.ResumeToken
	})
}

// Welcome is the welcome of the map the client plays on now.
func (c *Client) Welcome() protocol.Welcome {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	return c.welcome
}

// Static is the static map the client built for the map it plays on now.
func (c *Client) Static() *mapgen.World {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	return c.static
}

// Endpoint is the endpoint of the map the client plays on now.
func (c *Client) Endpoint() string {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	return c.endpoint
}

// Close closes the connection; the seat is kept for the resume grace.
func (c *Client) Close() error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.closed = true
	_ = c.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	return c.conn.Close()
}

// Drop cuts the connection without a close frame, as a network failure would.
func (c *Client) Drop() error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.closed = true
	return c.conn.UnderlyingConn().Close()
}
