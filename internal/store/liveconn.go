package store

import (
	"context"
	"database/sql/driver"
	"net"
	"time"

	"github.com/lib/pq"
)

// A connection the database closed while it sat in the pool (Postgres
// restarted, killed or shut down) is found before anything is sent on it:
// database/sql resets a pooled connection before using it again, and here
// that reset also asks the socket whether the server hung up, which takes
// no round trip. A critical action alone is one statement and its own
// commit (items.go), so a failure after it was sent leaves its outcome
// unknown; this keeps a connection that was dead all along from making it
// so, and an action in an outage is refused at once.

// probingConnector is lib/pq's connector whose connections tell a server
// that hung up.
type probingConnector struct{ pq *pq.Connector }

func newProbingConnector(c *pq.Connector) probingConnector {
	c.Dialer(socketNotingDialer{})
	return probingConnector{pq: c}
}

// dialedSocket is the context key under which Connect learns the socket
// lib/pq dialled: a *net.Conn.
type dialedSocket struct{}

func (c probingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	var socket net.Conn
	conn, err := c.pq.Connect(context.WithValue(ctx, dialedSocket{}, &socket))
	if err != nil {
		return nil, err
	}
	pc, ok := conn.(pqConn)
	if !ok || socket == nil {
		return conn, nil
	}
	return &probedConn{pqConn: pc, socket: socket}, nil
}

func (c probingConnector) Driver() driver.Driver { return c.pq.Driver() }

// socketNotingDialer dials as lib/pq's own dialer does, and notes the
// socket where Connect asked for it.
type socketNotingDialer struct{ net.Dialer }

func (d socketNotingDialer) Dial(network, address string) (net.Conn, error) {
	return d.DialContext(context.Background(), network, address)
}

func (d socketNotingDialer) DialTimeout(network, address string, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return d.DialContext(ctx, network, address)
}

func (d socketNotingDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	conn, err := d.Dialer.DialContext(ctx, network, address)
	if slot, ok := ctx.Value(dialedSocket{}).(*net.Conn); ok && err == nil {
		*slot = conn
	}
	return conn, err
}

// pqConn is what database/sql uses of a lib/pq connection.
type pqConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.QueryerContext
	driver.ExecerContext
	driver.Pinger
	driver.NamedValueChecker
	driver.SessionResetter
	driver.Validator
}

// probedConn is a lib/pq connection whose reset probes its socket.
type probedConn struct {
	pqConn
	socket net.Conn
}

// ResetSession refuses a connection whose server hung up with
// driver.ErrBadConn: database/sql closes it and takes another.
func (c *probedConn) ResetSession(ctx context.Context) error {
	if err := c.pqConn.ResetSession(ctx); err != nil {
		return err
	}
	if hungUp(c.socket) {
		return driver.ErrBadConn
	}
	return nil
}
