package testenv

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lib/pq"
)

// pgInstallHint is what every "binaries missing" error tells the reader to do.
const pgInstallHint = "install them with `apt-get install postgresql-15` " +
	"(or point ROOMKEEPER_PG_BIN at a directory holding initdb and postgres)"

// Timeouts for the server's life cycle. Generous, because a loaded CI
// machine running -race tests in parallel is slow to fork a cluster.
const (
	pgStartTimeout = 60 * time.Second
	pgStopTimeout  = 30 * time.Second
	pgPollInterval = 20 * time.Millisecond
)

// Postgres is a running throwaway database server: its own cluster in a
// temporary directory, listening on a free loopback port with trust
// authentication and fsync off. It is safe for concurrent use.
type Postgres struct {
	// DSN connects to the server's postgres database as the postgres
	// superuser: postgres://postgres@127.0.0.1:PORT/postgres?sslmode=disable.
	DSN string

	bin  string              // directory holding initdb and postgres
	dir  string              // temporary directory: data/, sock/, postgres.log
	port int                 // fixed for the server's lifetime, so DSNs survive Restart
	cred *syscall.Credential // nil unless we are root and must drop to the postgres user

	mu      sync.Mutex
	proc    *pgProcess // nil while the server is down
	removed bool       // Stop ran: the directory is gone for good
}

// pgProcess is one run of the postmaster.
type pgProcess struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited and been reaped
	err  error         // the Wait result, valid after done
}

// StartPostgres initialises a cluster in a new temporary directory and starts
// a server on it. Missing binaries are an error that says what to install,
// never a reason to skip: a skipped database test in CI is a silent pass.
func StartPostgres() (*Postgres, error) {
	bin, err := findPostgresBin()
	if err != nil {
		return nil, err
	}
	cred, err := postgresCredential()
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	p := &Postgres{
		DSN:  pgDSN(port, "postgres"),
		bin:  bin,
		port: port,
		cred: cred,
	}
	if err := p.initCluster(); err != nil {
		return nil, errors.Join(err, p.removeDir())
	}
	if err := p.Restart(); err != nil {
		return nil, errors.Join(err, p.removeDir())
	}
	return p, nil
}

// Dir is the server's temporary directory (data/, sock/, postgres.log).
func (p *Postgres) Dir() string { return p.dir }

// Port is the loopback TCP port the server listens on.
func (p *Postgres) Port() int { return p.port }

// NewDatabase creates an empty database and returns its DSN, so each test
// gets its own schema without paying for a server of its own.
func (p *Postgres) NewDatabase(name string) (dsn string, err error) {
	db, err := p.open("postgres")
	if err != nil {
		return "", err
	}
	defer func() { err = errors.Join(err, db.Close()) }()
	ctx, cancel := context.WithTimeout(context.Background(), pgStartTimeout)
	defer cancel()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+pq.QuoteIdentifier(name)); err != nil {
		return "", fmt.Errorf("creating database %q: %w", name, err)
	}
	return pgDSN(p.port, name), nil
}

// Stop shuts the server down fast (open transactions are rolled back) and
// removes its directory. The Postgres is unusable afterwards.
func (p *Postgres) Stop() error {
	err := p.Halt()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.proc != nil { // Halt failed and the server still runs: don't pull the directory from under it
		return err
	}
	p.removed = true
	return errors.Join(err, p.removeDir())
}

// Halt shuts the server down fast like Stop but keeps the directory, so
// Restart brings the same data back. Outage tests use it for the clean
// "the database system is shutting down" case; Kill is the crash case.
func (p *Postgres) Halt() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.proc == nil {
		return nil
	}
	// SIGINT is Postgres' fast shutdown: roll back, disconnect, checkpoint.
	if err := p.proc.cmd.Process.Signal(syscall.SIGINT); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signalling postgres: %w", err)
	}
	select {
	case <-p.proc.done:
		p.proc = nil
		return nil
	case <-time.After(pgStopTimeout):
		return p.killLocked()
	}
}

// Kill SIGKILLs the server and all its backends at once, like a crashed
// machine, and keeps the directory for Restart.
func (p *Postgres) Kill() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.proc == nil {
		return nil
	}
	return p.killLocked()
}

func (p *Postgres) killLocked() error {
	// Every backend calls setsid, so no process group reaches them all:
	// freeze the postmaster so it forks nothing new, kill the children it
	// has, then kill it. A backend left running would keep the shared memory
	// segment attached and stop Restart with "pre-existing shared memory
	// block is still in use".
	postmaster := p.proc.cmd.Process
	if err := postmaster.Signal(syscall.SIGSTOP); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stopping postgres: %w", err)
	}
	children, err := childPIDs(postmaster.Pid)
	if err != nil {
		return err
	}
	for _, pid := range children {
		_ = syscall.Kill(pid, syscall.SIGKILL) // already gone is fine
	}
	if err := postmaster.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("killing postgres: %w", err)
	}
	<-p.proc.done
	p.proc = nil
	return waitExited(children)
}

// Restart starts the server again on the same port and data directory
// after Halt or Kill (a no-op while it runs), and waits until it accepts
// connections. After a Kill, Postgres runs crash recovery first.
func (p *Postgres) Restart() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.removed {
		return errors.New("postgres was stopped and its directory removed; start a new one")
	}
	if p.proc != nil {
		return nil
	}
	proc, err := p.spawn()
	if err != nil {
		return err
	}
	if err := p.waitReady(proc); err != nil {
		p.proc = proc
		return errors.Join(err, p.killLocked())
	}
	p.proc = proc
	return nil
}

// initCluster makes the temporary directory, owned by the user the server
// runs as, and runs initdb in it.
func (p *Postgres) initCluster() error {
	dir, err := os.MkdirTemp("", "roomkeeper-pg-")
	if err != nil {
		return err
	}
	p.dir = dir
	if err := os.Mkdir(filepath.Join(dir, "sock"), 0o700); err != nil {
		return err
	}
	if err := p.chownAll(dir, filepath.Join(dir, "sock")); err != nil {
		return err
	}
	cmd := p.command("initdb",
		"-D", p.dataDir(), "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb in %s: %w\n%s", dir, err, out)
	}
	return nil
}

// spawn starts the postmaster with its log in postgres.log.
func (p *Postgres) spawn() (*pgProcess, error) {
	logFile, err := os.OpenFile(p.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child holds its own copy of the descriptor
	cmd := p.command("postgres",
		"-D", p.dataDir(),
		"-p", strconv.Itoa(p.port),
		"-k", filepath.Join(p.dir, "sock"),
		"-c", "listen_addresses=127.0.0.1",
		// Test data is thrown away: durability to disk buys nothing.
		"-c", "fsync=off",
		"-c", "full_page_writes=off",
		// Each test database gets pools of its own.
		"-c", "max_connections=300",
	)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	// Should the test binary die without Stop, take the server with it
	// (the backends follow when they see the postmaster gone). Linux sends
	// it when the forking OS thread ends, which Go only does for goroutines
	// that exit while locked to their thread; nothing here locks one.
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting postgres: %w", err)
	}
	proc := &pgProcess{cmd: cmd, done: make(chan struct{})}
	go func() {
		proc.err = cmd.Wait()
		close(proc.done)
	}()
	return proc, nil
}

// waitReady polls until the server accepts a query, failing early with the
// log when the postmaster exits (a bad flag, a taken port).
func (p *Postgres) waitReady(proc *pgProcess) error {
	db, err := p.open("postgres")
	if err != nil {
		return err
	}
	defer db.Close()
	deadline := time.Now().Add(pgStartTimeout)
	tick := time.NewTicker(pgPollInterval)
	defer tick.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := db.PingContext(ctx)
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres on port %d not ready after %s: %w\n%s", p.port, pgStartTimeout, err, p.logTail())
		}
		select {
		case <-proc.done:
			return fmt.Errorf("postgres exited during start (%w)\n%s", proc.err, p.logTail())
		case <-tick.C:
		}
	}
}

// open returns a pool on one of the server's databases.
func (p *Postgres) open(database string) (*sql.DB, error) {
	connector, err := pq.NewConnector(pgDSN(p.port, database))
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(connector), nil
}

// command runs one of the server binaries as the server's user, in its
// directory (the caller's working directory may be unreadable to it), with
// an environment that no PG* variable of the caller leaks into.
func (p *Postgres) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(p.bin, name), args...)
	cmd.Dir = p.dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "LC_ALL=C", "TZ=UTC"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	return cmd
}

// chownAll hands paths to the server's user when we run as root.
func (p *Postgres) chownAll(paths ...string) error {
	if p.cred == nil {
		return nil
	}
	for _, path := range paths {
		if err := os.Chown(path, int(p.cred.Uid), int(p.cred.Gid)); err != nil {
			return err
		}
	}
	return nil
}

func (p *Postgres) removeDir() error {
	if p.dir == "" {
		return nil
	}
	return os.RemoveAll(p.dir)
}

func (p *Postgres) dataDir() string { return filepath.Join(p.dir, "data") }
func (p *Postgres) logPath() string { return filepath.Join(p.dir, "postgres.log") }

// logTail is the end of the server log, for start failures.
func (p *Postgres) logTail() string {
	data, err := os.ReadFile(p.logPath())
	if err != nil {
		return "(no postgres log: " + err.Error() + ")"
	}
	const max = 4000
	if len(data) > max {
		data = data[len(data)-max:]
	}
	return string(data)
}

// pgDSN is the URL for a database on the loopback server.
func pgDSN(port int, database string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", port, database)
}

// findPostgresBin locates initdb and postgres: ROOMKEEPER_PG_BIN, else the
// newest Debian /usr/lib/postgresql/*/bin, else PATH.
func findPostgresBin() (string, error) {
	if dir := os.Getenv("ROOMKEEPER_PG_BIN"); dir != "" {
		if !hasServerBinaries(dir) {
			return "", fmt.Errorf("ROOMKEEPER_PG_BIN=%s holds no initdb and postgres: %s", dir, pgInstallHint)
		}
		return dir, nil
	}
	if dir := newestDebianPostgres(); dir != "" {
		return dir, nil
	}
	initdb, err := exec.LookPath("initdb")
	if err == nil && hasServerBinaries(filepath.Dir(initdb)) {
		return filepath.Dir(initdb), nil
	}
	return "", fmt.Errorf("PostgreSQL server binaries (initdb, postgres) not found in "+
		"ROOMKEEPER_PG_BIN, /usr/lib/postgresql/*/bin or PATH: %s", pgInstallHint)
}

// newestDebianPostgres returns the bin directory of the highest major
// version installed the Debian way, or "".
func newestDebianPostgres() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	major := func(dir string) int {
		n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
		return n
	}
	slices.SortFunc(dirs, func(a, b string) int { return major(b) - major(a) })
	for _, dir := range dirs {
		if hasServerBinaries(dir) {
			return dir
		}
	}
	return ""
}

func hasServerBinaries(dir string) bool {
	for _, name := range []string{"initdb", "postgres"} {
		if info, err := os.Stat(filepath.Join(dir, name)); err != nil || info.IsDir() {
			return false
		}
	}
	return true
}

// postgresCredential is the postgres OS user when we run as root, because
// the server refuses to run as root; nil otherwise (run as ourselves).
func postgresCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, and Postgres refuses to run as root: "+
			"need a postgres OS user to run it as (%w); `apt-get install postgresql-15` creates one", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, err
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// freePort finds an unused loopback port below the kernel's ephemeral
// range. A test that halts its Postgres and starts it again needs the same
// port back: a port of the ephemeral range can meanwhile become the local
// port of any outgoing connection (a CI run saw "Address already in use"),
// one below it never does. Another listener may still take it, rarely;
// the start then fails with the log.
func freePort() (int, error) {
	low, high := belowEphemeral()
	for range 200 {
		port := low + rand.IntN(high-low)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err == nil {
			_ = l.Close()
			return port, nil
		}
	}
	return 0, fmt.Errorf("no free port in %d-%d", low, high)
}

// belowEphemeral is a range of ports under the ephemeral range
// (/proc/sys/net/ipv4/ip_local_port_range; Linux's default 32768 when it
// cannot be read) that servers may listen on.
func belowEphemeral() (low, high int) {
	high = 32768
	if data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if fields := strings.Fields(string(data)); len(fields) == 2 {
			if n, err := strconv.Atoi(fields[0]); err == nil && n > 12000 {
				high = n
			}
		}
	}
	return 10000, high
}

// childPIDs lists the processes whose parent is pid, from /proc.
func childPIDs(pid int) ([]int, error) {
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		return nil, err
	}
	var children []int
	for _, path := range stats {
		_, ppid, ok := readStat(path)
		if ok && ppid == pid {
			child, _ := strconv.Atoi(filepath.Base(filepath.Dir(path)))
			children = append(children, child)
		}
	}
	return children, nil
}

// waitExited polls until none of pids is a live process. Zombies count as
// exited: they hold no memory, and as orphans nobody may ever reap them.
func waitExited(pids []int) error {
	deadline := time.Now().Add(pgStopTimeout)
	for _, pid := range pids {
		for {
			state, _, ok := readStat(fmt.Sprintf("/proc/%d/stat", pid))
			if !ok || state == 'Z' || state == 'X' {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("postgres backend %d still running %s after SIGKILL", pid, pgStopTimeout)
			}
			<-time.After(pgPollInterval)
		}
	}
	return nil
}

// readStat returns the state and parent pid from a /proc/PID/stat file,
// whose second field (the command name, in parentheses) may hold spaces.
func readStat(path string) (state byte, ppid int, ok bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, false
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, 0, false
	}
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 2 || len(fields[0]) != 1 {
		return 0, 0, false
	}
	ppid, err = strconv.Atoi(fields[1])
	return fields[0][0], ppid, err == nil
}
