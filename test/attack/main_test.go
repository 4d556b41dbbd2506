// Package attack is the standing attack suite: it builds the real room
// server (cmd/roomserver), runs it as a process on a real Postgres, and
// attacks it over loopback the way a hostile client would, with raw
// gorilla/websocket connections and pkg/client. Every case asserts the
// behaviour docs/protocol.md documents (error code, close code, what
// survives) and logs what the attack cost the server: its RSS, goroutines
// and CPU (see docs/benchmarks.md, "Attack suite").
//
// Run it alone with
//
//	go test -count=1 -v -run . ./test/attack/
//
// It needs the PostgreSQL server binaries (internal/testenv finds them)
// and, for the cases that attack what the API server guards (kube_test.go),
// the control plane hack/controlplane.sh builds; a missing dependency fails
// the suite, it never skips.
//
// Nothing here asserts a time: conditions are polled with a deadline, and
// timings are logged, not checked. What is asserted are bounded properties
// (codes, close codes, counts, distances).
package attack

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	_ "github.com/lib/pq" // the auditor's view of the database

	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/serverlog"
	"github.com/roomkeeper/roomkeeper/internal/testenv"
	"github.com/roomkeeper/roomkeeper/internal/token"
	"github.com/roomkeeper/roomkeeper/internal/wait"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// The room every server of the suite serves, as the operator names it.
const (
	room     = "demo"
	mapName  = "town"
	instance = "demo-town"
)

// Maps: townMap is an open meadow with a few NPCs; lootMap has loot all
// round the spawn (44 items within 60 units of it).
const (
	townMap = `{"seed":42,"width":512,"height":512,"biome":"meadow","npcDensity":0.02}`
	lootMap = `{"seed":5,"width":256,"height":256,"lootDensity":1}`
)

// Bounds of the suite's waits; all generous, because `make test` runs
// every package at once on two cores.
const (
	startTimeout = 60 * time.Second // a server process until it serves and is ready
	caseTimeout  = 60 * time.Second // one case's context
	clockTicks   = 100              // USER_HZ: the unit of utime/stime in /proc/<pid>/stat
	ticketTTL    = 10 * time.Second // what the join API signs (tokens.ttl)
	maxLifetime  = 2 * ticketTTL    // what the room server accepts (return tickets live twice as long)
	helloTimeout = 10 * time.Second // docs/protocol.md: hello within 10 s (the default of --hello-timeout, kept: opening the crowd takes seconds)
	shutdownWait = 10 * time.Second // SIGTERM to exit, before SIGKILL
	logLines     = 200              // server log lines kept for failure messages
)

// suite is what TestMain sets up once: the server binary, its token keys
// and the Postgres every server uses (a database each).
var suite struct {
	binary string
	keyDir string
	keys   token.KeySet
	signer *token.Signer
	pg     *testenv.Postgres
	// err is why setup failed; every case fails with it (never skips).
	err error
}

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	dir, err := os.MkdirTemp("", "roomkeeper-attack-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "attack suite:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	suite.err = setup(dir)
	code := m.Run()
	if suite.pg != nil {
		_ = suite.pg.Stop()
	}
	stopControlPlane()
	if testing.Verbose() {
		printFigures(os.Stdout)
	}
	return code
}

// setup builds cmd/roomserver, writes a key directory as the operator
// mounts it, and starts Postgres.
func setup(dir string) error {
	root, err := testenv.RepoRoot()
	if err != nil {
		return err
	}
	suite.binary = filepath.Join(dir, "roomserver")
	build := exec.Command("go", "build", "-o", suite.binary, "./cmd/roomserver")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("building cmd/roomserver: %w\n%s", err, out)
	}
	key, err := token.NewKey()
	if err != nil {
		return err
	}
	suite.keys = token.KeySet{Current: key}
	suite.keyDir = filepath.Join(dir, "keys")
	if err := os.Mkdir(suite.keyDir, 0o700); err != nil {
		return err
	}
	if err := suite.keys.WriteDir(suite.keyDir); err != nil {
		return err
	}
	suite.signer = token.NewSigner(token.StaticKeys(suite.keys), time.Now)
	if suite.pg, err = testenv.StartPostgres(); err != nil {
		return fmt.Errorf("no Postgres for the attack suite: %w", err)
	}
	return nil
}

// needSuite fails the test when the suite could not be set up.
func needSuite(t testing.TB) {
	t.Helper()
	if suite.err != nil {
		t.Fatalf("attack suite setup: %v", suite.err)
	}
}

// caseContext is a case's deadline.
func caseContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), caseTimeout)
	t.Cleanup(cancel)
	return ctx
}

// eventually checks cond until it returns nil, or fails with its last
// error once within has passed: a condition waited for, never a sleep.
func eventually(t testing.TB, within time.Duration, cond func() error) {
	t.Helper()
	wait.Eventually(t, within, "a condition", cond)
}

var databases atomic.Int64

// newDatabase is a fresh, empty database on the suite's Postgres.
func newDatabase(t testing.TB) string {
	t.Helper()
	needSuite(t)
	dsn, err := suite.pg.NewDatabase(fmt.Sprintf("attack%d", databases.Add(1)))
	if err != nil {
		t.Fatal(err)
	}
	return dsn
}

// openDB is a plain database/sql pool on dsn, for checking what the
// server committed.
func openDB(t testing.TB, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// roomServer is one cmd/roomserver process, started as the operator's pod
// builder starts it: flags, MapConfig and DSN in the environment, mounted
// key files.
type roomServer struct {
	t    testing.TB
	cmd  *exec.Cmd
	pid  int
	game string // host:port of the WebSocket listener
	ops  string // host:port of /healthz, /readyz, /metrics
	url  string // ws://game/ws
	dsn  string

	exited chan struct{}   // closed once the process has exited and been reaped
	log    *serverlog.Tail // the newest log lines
}

// startServer runs a room server on dsn with mapConfig (and flags) and
// waits until it is ready. It is stopped when the test ends.
func startServer(t testing.TB, dsn, mapConfig string, flags ...string) *roomServer {
	t.Helper()
	r := launchServer(t, dsn, mapConfig, flags...)
	r.waitReady(startTimeout)
	return r
}

// launchServer runs a room server and waits until it serves, not until it
// is ready.
func launchServer(t testing.TB, dsn, mapConfig string, flags ...string) *roomServer {
	t.Helper()
	needSuite(t)
	cmd := exec.Command(suite.binary, append([]string{
		"--room=" + room, "--map=" + mapName, "--instance=" + instance, "--key-dir=" + suite.keyDir,
		"--listen=127.0.0.1:0", "--http-listen=127.0.0.1:0", "--tick-rate=30", "--snapshot-rate=10",
		"--checkpoint-interval=200ms", "--token-ttl=" + ticketTTL.String(), "--shutdown-grace=5s"}, flags...)...)
	cmd.Env = append(serverEnviron(), "ROOMKEEPER_MAP_CONFIG="+mapConfig, "ROOMKEEPER_DATABASE_URL="+dsn, "POD_NAME="+instance)
	// The server must not outlive the test binary.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the room server: %v", err)
	}
	r := &roomServer{t: t, cmd: cmd, pid: cmd.Process.Pid, dsn: dsn, exited: make(chan struct{}), log: serverlog.NewTail(logLines)}
	t.Cleanup(r.stop)
	serving := make(chan serverlog.Addrs, 1)
	go r.readLog(stderr, serving)
	select {
	case addrs := <-serving:
		r.game, r.ops = addrs.Game, addrs.HTTP
	case <-r.exited:
		t.Fatalf("the room server exited before serving:\n%s", r.logTail())
	case <-time.After(startTimeout):
		t.Fatalf("the room server did not serve within %s:\n%s", startTimeout, r.logTail())
	}
	r.url = "ws://" + r.game + "/ws"
	return r
}

// waitReady waits until the server says it is ready.
func (r *roomServer) waitReady(within time.Duration) {
	r.t.Helper()
	eventually(r.t, within, func() error {
		if r.hasExited() {
			return fmt.Errorf("the room server exited while starting:\n%s", r.logTail())
		}
		return r.get("/readyz")
	})
}

// hasExited reports whether the process has ended.
func (r *roomServer) hasExited() bool {
	select {
	case <-r.exited:
		return true
	default:
		return false
	}
}

// serverEnviron is this process's environment without what would change
// the server's behaviour: no cluster (heartbeats), no inherited settings.
func serverEnviron() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "POD_") && !strings.HasPrefix(kv, "ROOMKEEPER_") && !strings.HasPrefix(kv, "KUBECONFIG=") {
			env = append(env, kv)
		}
	}
	return env
}

// readLog follows the server's log and reaps the process once it ends.
func (r *roomServer) readLog(stderr io.Reader, serving chan<- serverlog.Addrs) {
	r.log.Follow(stderr, serving)
	_ = r.cmd.Wait()
	close(r.exited)
}

// logTail is the server's newest log lines, for failure messages.
func (r *roomServer) logTail() string { return r.log.String() }

// stop ends the server with SIGTERM, or SIGKILL when it does not exit.
func (r *roomServer) stop() {
	select {
	case <-r.exited:
		return
	default:
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
	case <-time.After(shutdownWait):
		r.kill()
	}
}

// kill ends the server with SIGKILL, as a crash would, and waits for it.
func (r *roomServer) kill() {
	_ = r.cmd.Process.Kill()
	<-r.exited
}

// get fetches one of the server's ops paths and fails unless it is 200.
func (r *roomServer) get(path string) error {
	_, err := r.fetch(path)
	return err
}

func (r *roomServer) fetch(path string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.ops+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", path, resp.Status, bytes.TrimSpace(body))
	}
	return body, nil
}

// metrics scrapes /metrics into series -> value; a series is its name and
// labels as the text format writes them: go_goroutines,
// roomkeeper_roomserver_disconnects_total{reason="idle_timeout"}.
func (r *roomServer) metrics() map[string]float64 {
	r.t.Helper()
	body, err := r.fetch("/metrics")
	if err != nil {
		r.t.Fatalf("scraping the room server: %v", err)
	}
	series := map[string]float64{}
	for line := range strings.Lines(string(body)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			series[line[:i]] = v
		}
	}
	return series
}

// collectGarbage makes the server run a full GC cycle, through the heap
// profile of --pprof (gc=1), so heap figures show what is still live.
func (r *roomServer) collectGarbage() {
	r.t.Helper()
	if _, err := r.fetch("/debug/pprof/heap?gc=1"); err != nil {
		r.t.Fatalf("forcing a GC (is the server running with --pprof?): %v", err)
	}
}

// resources are the server process's figures at one moment.
type resources struct {
	rssKiB     int64
	heapBytes  float64 // go_memstats_heap_inuse_bytes: what the heap holds now, unlike RSS
	goroutines int
	cpuTicks   int64 // utime + stime, in USER_HZ ticks
	at         time.Time
}

func (r *roomServer) resources() resources {
	r.t.Helper()
	m := r.metrics()
	return resources{rssKiB: rssKiB(r.t, r.pid), heapBytes: m["go_memstats_heap_inuse_bytes"],
		goroutines: int(m["go_goroutines"]), cpuTicks: cpuTicks(r.t, r.pid), at: time.Now()}
}

func (res resources) String() string {
	return fmt.Sprintf("RSS %.1f MiB, heap in use %.1f MiB, %d goroutines", float64(res.rssKiB)/1024, res.heapBytes/(1<<20), res.goroutines)
}

// cores is the CPU the process spent between from and to, in cores.
func cores(from, to resources) float64 {
	wall := to.at.Sub(from.at).Seconds()
	if wall <= 0 {
		return 0
	}
	return float64(to.cpuTicks-from.cpuTicks) / clockTicks / wall
}

// rssKiB reads VmRSS from /proc/<pid>/status.
func rssKiB(t testing.TB, pid int) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			fields := strings.Fields(rest)
			if len(fields) > 0 {
				kib, err := strconv.ParseInt(fields[0], 10, 64)
				if err == nil {
					return kib
				}
			}
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

// cpuTicks reads utime + stime from /proc/<pid>/stat, whose second field
// (the command, in parentheses) may hold spaces.
func cpuTicks(t testing.TB, pid int) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	// After the command: state is field 3 of the file, utime 14, stime 15.
	if len(fields) < 13 {
		t.Fatalf("short /proc/%d/stat", pid)
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	return utime + stime
}

// figure is one resource figure of a case, for the summary.
type figure struct{ test, what, value string }

var figures struct {
	sync.Mutex
	list []figure
}

// record logs a figure and keeps it for the suite's summary.
func record(t testing.TB, what, format string, args ...any) {
	t.Helper()
	value := fmt.Sprintf(format, args...)
	t.Logf("figure: %s: %s", what, value)
	figures.Lock()
	figures.list = append(figures.list, figure{t.Name(), what, value})
	figures.Unlock()
}

// printFigures writes every recorded figure, case by case.
func printFigures(w io.Writer) {
	figures.Lock()
	defer figures.Unlock()
	if len(figures.list) == 0 {
		return
	}
	fmt.Fprintln(w, "\nAttack suite figures (room server process):")
	for _, f := range figures.list {
		fmt.Fprintf(w, "  %-40s %-48s %s\n", f.test, f.what, f.value)
	}
}

var characters atomic.Int64

// newCharacter is a character id no case used before.
func newCharacter(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), characters.Add(1))
}

// ticket is a join ticket as the join API signs it: the room's key, HS256,
// tokens.ttl, for character of user-<character>; opts change its claims.
func ticket(t testing.TB, character string, opts ...func(*token.Claims)) string {
	t.Helper()
	needSuite(t)
	c := token.Claims{Type: token.TypeJoin, Subject: "user-" + character, Character: character, Room: room, Map: instance}
	for _, o := range opts {
		o(&c)
	}
	raw, _, err := suite.signer.Sign(c, ticketTTL)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// join seats character on r through pkg/client; it is closed when the
// test ends.
func join(t testing.TB, ctx context.Context, r *roomServer, character string) *client.Client {
	t.Helper()
	c, err := client.Dial(ctx, r.url, protocol.Hello{Ticket: ticket(t, character)}, client.Options{})
	if err != nil {
		t.Fatalf("joining as %s: %v", character, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, err := c.WaitFor(ctx, func(s client.State) bool { return s.Sees(c.Welcome().PlayerID) }); err != nil {
		t.Fatalf("%s never saw itself: %v", character, err)
	}
	return c
}

// dialOptions shape a raw connection.
type dialOptions struct {
	// local is the source address (127.0.0.x); nil lets the kernel choose.
	local net.IP
	// noSubprotocol leaves roomkeeper.v1 out of the handshake.
	noSubprotocol bool
	// writeBuffer, when set, makes gorilla fragment messages into frames
	// of about this size.
	writeBuffer int
}

// dialRaw opens a WebSocket to r as an attacker does: no hello, nothing
// read yet. The status is the handshake's HTTP status (0 without an answer).
func dialRaw(ctx context.Context, r *roomServer, opts dialOptions) (*websocket.Conn, int, error) {
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second, WriteBufferSize: opts.writeBuffer}
	if !opts.noSubprotocol {
		d.Subprotocols = []string{protocol.Subprotocol}
	}
	if opts.local != nil {
		nd := net.Dialer{LocalAddr: &net.TCPAddr{IP: opts.local}, Timeout: 10 * time.Second}
		d.NetDialContext = nd.DialContext
	}
	conn, resp, err := d.DialContext(ctx, r.url, nil)
	status := 0
	if resp != nil {
		status = resp.StatusCode
		_ = resp.Body.Close()
	}
	return conn, status, err
}

// peer reads a raw connection in the background and keeps what arrived.
type peer struct {
	conn *websocket.Conn
	// done is closed when reading ends (the connection closed).
	done chan struct{}

	mu      sync.Mutex
	changed chan struct{}
	state   peerState
}

// peerState is what a peer received; a copy is handed out.
type peerState struct {
	welcome   *protocol.Welcome
	errors    []protocol.Error // at most maxKept, the first ones
	errorN    int
	acks      []protocol.Ack // at most maxKept
	pongs     int
	snapshots int
	// closed is why reading ended (a *websocket.CloseError for a close
	// frame); closedAt when.
	closed   error
	closedAt time.Time
}

const maxKept = 1000

// newPeer starts reading conn; the connection is closed when the test ends.
func newPeer(t testing.TB, conn *websocket.Conn) *peer {
	p := &peer{conn: conn, done: make(chan struct{}), changed: make(chan struct{})}
	t.Cleanup(func() { _ = conn.Close() })
	go p.read()
	return p
}

func (p *peer) read() {
	defer close(p.done)
	for {
		kind, data, err := p.conn.ReadMessage()
		if err != nil {
			p.update(func(s *peerState) { s.closed, s.closedAt = err, time.Now() })
			return
		}
		if kind == websocket.BinaryMessage {
			p.update(func(s *peerState) { s.snapshots++ })
			continue
		}
		var env protocol.Envelope
		if json.Unmarshal(data, &env) != nil {
			continue
		}
		p.update(func(s *peerState) {
			switch env.Kind {
			case protocol.KindWelcome:
				var w protocol.Welcome
				if json.Unmarshal(env.Payload, &w) == nil {
					s.welcome = &w
				}
			case protocol.KindError:
				var e protocol.Error
				if json.Unmarshal(env.Payload, &e) == nil && len(s.errors) < maxKept {
					s.errors = append(s.errors, e)
				}
				s.errorN++
			case protocol.KindAck:
				var a protocol.Ack
				if json.Unmarshal(env.Payload, &a) == nil && len(s.acks) < maxKept {
					s.acks = append(s.acks, a)
				}
			case protocol.KindPong:
				s.pongs++
			case protocol.KindSnapshot:
				s.snapshots++
			}
		})
	}
}

func (p *peer) update(fn func(*peerState)) {
	p.mu.Lock()
	fn(&p.state)
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
}

func (p *peer) snapshot() peerState {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.state
	s.errors, s.acks = slices.Clone(s.errors), slices.Clone(s.acks)
	return s
}

// waitFor blocks until cond holds or ctx ends; it does not stop at the
// close, so a condition on the close itself can be waited for.
func (p *peer) waitFor(ctx context.Context, what string, cond func(peerState) bool) (peerState, error) {
	for {
		p.mu.Lock()
		changed := p.changed
		p.mu.Unlock()
		s := p.snapshot()
		if cond(s) {
			return s, nil
		}
		if s.closed != nil {
			return s, fmt.Errorf("waiting for %s: the connection closed (%w)", what, s.closed)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return s, fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		}
	}
}

// waitClosed waits until the connection has closed and returns why.
func (p *peer) waitClosed(ctx context.Context) (peerState, error) {
	select {
	case <-p.done:
		return p.snapshot(), nil
	case <-ctx.Done():
		return p.snapshot(), fmt.Errorf("the connection is still open: %w", ctx.Err())
	}
}

// send writes one text message.
func (p *peer) send(data []byte) error {
	return p.conn.WriteMessage(websocket.TextMessage, data)
}

// sendMessage encodes and writes one client message.
func (p *peer) sendMessage(kind protocol.Kind, seq uint32, payload any) error {
	data, err := protocol.MarshalMessage(kind, seq, payload)
	if err != nil {
		return err
	}
	return p.send(data)
}

// count is how many times code arrived, as an error or as an ack refusing
// a command.
func (s peerState) count(code protocol.Code) int {
	n := 0
	for _, e := range s.errors {
		if e.Code == code {
			n++
		}
	}
	for _, a := range s.acks {
		if !a.OK && a.Code == code {
			n++
		}
	}
	return n
}

// closeCode is the close frame's code and reason, or -1 when the
// connection ended without one.
func closeCode(err error) (int, string) {
	var ce *websocket.CloseError
	if errors.As(err, &ce) {
		return ce.Code, ce.Text
	}
	return -1, ""
}

// rawJoin opens a raw connection and seats character with a hello; the
// peer has its welcome.
func rawJoin(t testing.TB, ctx context.Context, r *roomServer, character string) *peer {
	t.Helper()
	conn, status, err := dialRaw(ctx, r, dialOptions{})
	if err != nil {
		t.Fatalf("dialing (HTTP %d): %v", status, err)
	}
	p := newPeer(t, conn)
	if err := p.sendMessage(protocol.KindHello, 1, protocol.Hello{Ticket: ticket(t, character)}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.waitFor(ctx, "welcome", func(s peerState) bool { return s.welcome != nil }); err != nil {
		t.Fatal(err)
	}
	return p
}

// expectRefusedHello sends hello with raw and asserts the documented
// refusal: an error with code, then a close with 1008 whose reason is the
// code.
func expectRefusedHello(t *testing.T, ctx context.Context, r *roomServer, hello protocol.Hello, code protocol.Code) {
	t.Helper()
	conn, status, err := dialRaw(ctx, r, dialOptions{})
	if err != nil {
		t.Fatalf("dialing (HTTP %d): %v", status, err)
	}
	p := newPeer(t, conn)
	if err := p.sendMessage(protocol.KindHello, 1, hello); err != nil {
		t.Fatal(err)
	}
	s, err := p.waitClosed(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.welcome != nil {
		t.Fatalf("hello was welcomed (player %d), want refused with %s", s.welcome.PlayerID, code)
	}
	if len(s.errors) != 1 || s.errors[0].Code != code {
		t.Fatalf("hello answered with errors %+v, want one %s", s.errors, code)
	}
	if cc, reason := closeCode(s.closed); cc != websocket.ClosePolicyViolation || reason != string(code) {
		t.Fatalf("refused hello closed with %d %q (%v), want 1008 %q", cc, reason, s.closed, code)
	}
}

// expectWelcome sends hello and asserts a welcome, as a control that a
// refusal was for the attack and not for a broken server or ticket.
func expectWelcome(t *testing.T, ctx context.Context, r *roomServer, hello protocol.Hello) {
	t.Helper()
	c, err := client.Dial(ctx, r.url, hello, client.Options{})
	if err != nil {
		t.Fatalf("a good hello was refused: %v", err)
	}
	_ = c.Close()
}

// logResources logs the server's figures at the end of a case.
func logResources(t testing.TB, r *roomServer, when string) resources {
	t.Helper()
	res := r.resources()
	record(t, when, "%s", res)
	return res
}
