package testenv

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// CommitCutter is a TCP proxy in front of a Postgres that can lose the
// answer to a COMMIT: the server commits, and the client's connection
// breaks before it hears so, as when the network or the database's host
// goes away at that moment. The client cannot know whether its
// transaction committed; that is what the tests using it are about.
type CommitCutter struct {
	listener net.Listener
	target   string
	armed    atomic.Pointer[string] // what the transaction to cut runs
	cuts     chan struct{}
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    map[net.Conn]struct{}
	closed   bool
}

// NewCommitCutter starts a proxy to the database of dsn (a postgres://
// URL) and returns it with the DSN that reaches the database through it.
func NewCommitCutter(dsn string) (*CommitCutter, string, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return nil, "", fmt.Errorf("commit cutter: %w", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", fmt.Errorf("commit cutter: %w", err)
	}
	c := &CommitCutter{listener: l, target: u.Host, cuts: make(chan struct{}, 16), conns: map[net.Conn]struct{}{}}
	u.Host = l.Addr().String()
	c.wg.Go(c.accept)
	return c, u.String(), nil
}

// CutNextCommitOf arms the proxy for the next transaction that ran a
// statement whose text contains sql (a table's name, say), so other
// writers on the same database (checkpoints, lease renewals) go through:
// its COMMIT reaches the server, and the connection is cut once the
// server has answered it, before the answer is passed on.
func (c *CommitCutter) CutNextCommitOf(sql string) { c.armed.Store(&sql) }

// Cuts receives once for each COMMIT whose answer was lost.
func (c *CommitCutter) Cuts() <-chan struct{} { return c.cuts }

// Close stops the proxy and cuts every connection through it.
func (c *CommitCutter) Close() error {
	err := c.listener.Close()
	c.mu.Lock()
	c.closed = true
	for conn := range c.conns {
		_ = conn.Close()
	}
	c.mu.Unlock()
	c.wg.Wait()
	return err
}

func (c *CommitCutter) accept() {
	for {
		client, err := c.listener.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", c.target)
		if err != nil {
			_ = client.Close()
			continue
		}
		if !c.track(client, server) {
			_, _ = client.Close(), server.Close()
			return
		}
		c.wg.Go(func() { c.relay(client, server) })
	}
}

// track records the pair so Close can cut it; false once closed.
func (c *CommitCutter) track(conns ...net.Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	for _, conn := range conns {
		c.conns[conn] = struct{}{}
	}
	return true
}

func (c *CommitCutter) forget(conns ...net.Conn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, conn := range conns {
		_ = conn.Close()
		delete(c.conns, conn)
	}
}

// relay passes messages both ways until either side ends or a commit is
// cut.
func (c *CommitCutter) relay(client, server net.Conn) {
	defer c.forget(client, server)
	var cutting atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = c.fromClient(client, server, &cutting)
		_ = server.Close()
	}()
	if c.fromServer(server, client, &cutting) {
		select {
		case c.cuts <- struct{}{}:
		default: // nobody counts them
		}
	}
	_ = client.Close()
	<-done
}

// fromClient copies the client's startup message, then its messages one
// by one, noting a COMMIT to cut.
func (c *CommitCutter) fromClient(client, server net.Conn, cutting *atomic.Bool) error {
	startup, err := readFramed(client, nil) // the startup message has no type
	if err != nil {
		return err
	}
	if _, err := server.Write(startup); err != nil {
		return err
	}
	tx := transaction{statements: map[string]string{}}
	for {
		msg, err := readMessage(client)
		if err != nil {
			return err
		}
		if tx.commits(msg) {
			if c.shouldCut(&tx) {
				cutting.Store(true) // before the server can answer it
			}
			tx.texts = tx.texts[:0]
		}
		if _, err := server.Write(msg); err != nil {
			return err
		}
	}
}

// shouldCut disarms the proxy and reports true when the transaction is
// the one to cut.
func (c *CommitCutter) shouldCut(tx *transaction) bool {
	want := c.armed.Load()
	return want != nil && tx.ran(*want) && c.armed.CompareAndSwap(want, nil)
}

// transaction follows what a connection's current transaction runs: the
// text of simple queries, and of prepared statements as they are bound.
type transaction struct {
	statements map[string]string // prepared statement name: its text
	texts      []string
}

// commits notes msg and reports whether it ends the transaction with a
// COMMIT; a COMMIT or ROLLBACK starts the next one afresh.
func (tx *transaction) commits(msg []byte) bool {
	fields := bytes.Split(msg[5:], []byte{0})
	switch {
	case msg[0] == 'P' && len(fields) >= 2: // Parse: name, text
		tx.statements[string(fields[0])] = string(fields[1])
	case msg[0] == 'B' && len(fields) >= 2: // Bind: portal, statement
		tx.texts = append(tx.texts, tx.statements[string(fields[1])])
	case msg[0] == 'Q':
		text := strings.ToUpper(strings.TrimSpace(string(fields[0])))
		if strings.HasPrefix(text, "COMMIT") {
			return true
		}
		if strings.HasPrefix(text, "ROLLBACK") || strings.HasPrefix(text, "BEGIN") {
			tx.texts = tx.texts[:0]
		}
		tx.texts = append(tx.texts, string(fields[0]))
	}
	return false
}

// ran reports whether a statement of the transaction contains sql.
func (tx *transaction) ran(sql string) bool {
	return slices.ContainsFunc(tx.texts, func(text string) bool { return strings.Contains(text, sql) })
}

// fromServer copies the server's messages one by one; with a COMMIT to
// cut, it stops at the server's CommandComplete and reports true.
func (c *CommitCutter) fromServer(server, client net.Conn, cutting *atomic.Bool) bool {
	for {
		msg, err := readMessage(server)
		if err != nil {
			return false
		}
		if cutting.Load() && msg[0] == 'C' {
			return true
		}
		if _, err := client.Write(msg); err != nil {
			return false
		}
	}
}

// readMessage reads a typed message: its type byte, length and body.
func readMessage(r io.Reader) ([]byte, error) {
	var kind [1]byte
	if _, err := io.ReadFull(r, kind[:]); err != nil {
		return nil, err
	}
	return readFramed(r, kind[:])
}

// readFramed reads a length (which counts itself) and the body after it,
// returning them after prefix.
func readFramed(r io.Reader, prefix []byte) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > 1<<30 {
		return nil, errors.New("commit cutter: a message of impossible length")
	}
	msg := make([]byte, 0, len(prefix)+int(n))
	msg = append(append(msg, prefix...), size[:]...)
	msg = append(msg, make([]byte, n-4)...)
	_, err := io.ReadFull(r, msg[len(prefix)+4:])
	return msg, err
}
