package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/playtest"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/serverlog"
	"github.com/roomkeeper/roomkeeper/internal/testenv"
	"github.com/roomkeeper/roomkeeper/internal/token"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// process is a roomserver binary started as the operator's pod would start
// it: flags, MapConfig in the environment, mounted key files.
type process struct {
	cmd        *exec.Cmd
	game, http string
}

// fixture builds the binary once per test and writes a key directory.
type fixture struct {
	t      *testing.T
	binary string
	keys   token.KeySet
	keyDir string
	env    []string
}

func newFixture(t *testing.T, env ...string) *fixture {
	dir := t.TempDir()
	binary := filepath.Join(dir, "roomserver")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		t.Fatalf("building roomserver: %v\n%s", err, out)
	}
	key, err := token.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, binary: binary, keys: token.KeySet{Current: key}, keyDir: dir, env: env}
	if err := f.keys.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	return f
}

// start runs the binary on mapConfig with the tests' usual flags and extra
// ones after them.
func (f *fixture) start(mapConfig string, extra ...string) *process {
	f.t.Helper()
	args := append([]string{"--room=demo", "--map=town", "--instance=demo-town", "--key-dir=" + f.keyDir,
		"--listen=127.0.0.1:0", "--http-listen=127.0.0.1:0", "--tick-rate=30", "--snapshot-rate=10", "--checkpoint-interval=200ms"},
		extra...)
	return f.run(args, append([]string{"ROOMKEEPER_MAP_CONFIG=" + mapConfig}, f.env...))
}

// run runs the binary with args and env (on top of the test's own
// environment) and waits until it serves.
func (f *fixture) run(args, env []string) *process {
	f.t.Helper()
	cmd := exec.Command(f.binary, args...)
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		f.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	p := &process{cmd: cmd}
	p.game, p.http = serving(f.t, stderr)
	return p
}

func (f *fixture) ticket(character string) string {
	raw, _, err := token.NewSigner(token.StaticKeys(f.keys), time.Now).Sign(token.Claims{Type: token.TypeJoin,
		Subject: "user-" + character, Character: character, Room: "demo", Map: "demo-town"}, 10*time.Second)
	if err != nil {
		f.t.Fatal(err)
	}
	return raw
}

func (p *process) join(t *testing.T, ctx context.Context, ticket string) *client.Client {
	t.Helper()
	c, err := client.Dial(ctx, "ws://"+p.game+"/ws", protocol.Hello{Ticket: ticket}, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// waitReady polls /readyz until the map is ready.
func (p *process) waitReady(t *testing.T, ctx context.Context) {
	t.Helper()
	for ctx.Err() == nil {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.http+"/readyz", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
	}
	t.Fatal("roomserver never became ready")
}

// TestStandaloneProcess plays on the real binary without a database and
// stops it with SIGTERM.
func TestStandaloneProcess(t *testing.T) {
	f := newFixture(t)
	p := f.start(`{"seed":42,"width":512,"height":512}`)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := p.join(t, ctx, f.ticket("c"))
	if _, err := c.WaitFor(ctx, func(s client.State) bool { return s.Sees(c.Welcome().PlayerID) }); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	s, _ := c.WaitFor(ctx, func(s client.State) bool { return s.Closed != nil })
	if len(s.Events) == 0 || s.Events[len(s.Events)-1].Type != protocol.EventServerShutdown {
		t.Errorf("events before close: %+v, want server_shutdown last", s.Events)
	}
	if err := waitExit(ctx, p.cmd); err != nil {
		t.Fatalf("exit after SIGTERM: %v, want 0", err)
	}
}

// TestKill9KeepsAcknowledgedPickups picks loot up on a real process with a
// real Postgres, kills it with SIGKILL right after the acks, restarts it,
// and finds exactly the acknowledged items owned and off the ground.
// startPostgres runs a Postgres of the test's own (some tests stop it),
// stopped when the test ends.
func startPostgres(t *testing.T) *testenv.Postgres {
	t.Helper()
	pg, err := testenv.StartPostgres()
	if err != nil {
		t.Fatalf("no test Postgres: %v", err)
	}
	t.Cleanup(func() { _ = pg.Stop() })
	return pg
}

// newDatabase makes database name on pg and returns its DSN.
func newDatabase(t *testing.T, pg *testenv.Postgres, name string) string {
	t.Helper()
	dsn, err := pg.NewDatabase(name)
	if err != nil {
		t.Fatal(err)
	}
	return dsn
}

// TestADatabaseAwayAtStartIsWaitedFor: a map whose database cannot be
// reached when it starts keeps running, not ready, saying why; it
// migrates, restores and admits players once the database is back.
// Exiting instead would count as a crash toward quarantine.
func TestADatabaseAwayAtStartIsWaitedFor(t *testing.T) {
	pg := startPostgres(t)
	dsn := newDatabase(t, pg, "away")
	if err := pg.Halt(); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, "ROOMKEEPER_DATABASE_URL="+dsn, "POD_NAME=demo-town")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p := f.start(`{"seed":42,"width":256,"height":256}`)
	// Several failed attempts, the server answering between them: it did
	// not exit.
	for tries := 0; tries < 3; {
		status, body := testenv.Get(t, ctx, http.DefaultClient, "http://"+p.http+"/readyz")
		if status != http.StatusServiceUnavailable {
			t.Fatalf("readyz with the database away: %d %q, want 503", status, body)
		}
		if strings.Contains(body, "Migrating the database") {
			tries++
		}
		select {
		case <-ctx.Done():
			t.Fatal("readyz never said it waits for the database")
		case <-time.After(200 * time.Millisecond):
		}
	}
	if err := pg.Restart(); err != nil {
		t.Fatal(err)
	}
	p.waitReady(t, ctx)
	c := p.join(t, ctx, f.ticket("una"))
	if c.Welcome().PlayerID == 0 {
		t.Fatal("no player after the database came back")
	}
}

func TestKill9KeepsAcknowledgedPickups(t *testing.T) {
	pg := startPostgres(t)
	dsn := newDatabase(t, pg, "kill9")
	const lootMap = `{"seed":5,"width":256,"height":256,"lootDensity":1}`
	f := newFixture(t, "ROOMKEEPER_DATABASE_URL="+dsn, "POD_NAME=demo-town")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	first := f.start(lootMap)
	first.waitReady(t, ctx)
	c := first.join(t, ctx, f.ticket("kim"))
	var acked []protocol.ItemView
	var taken []protocol.EntityState
	for range 2 {
		loot := nearestLoot(t, ctx, c)
		walkTo(t, ctx, c, loot)
		ack, err := c.Do(ctx, protocol.FeatureLoot, protocol.ActionPickup, protocol.LootPickup{Entity: loot.ID})
		if err != nil || !ack.OK {
			t.Fatalf("pickup: %+v", ack)
		}
		acked, taken = ack.Inventory, append(taken, loot)
		if _, err := c.WaitFor(ctx, func(s client.State) bool { return !s.Sees(loot.ID) }); err != nil {
			t.Fatal(err)
		}
	}
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.cmd.Wait()

	second := f.start(lootMap)
	second.waitReady(t, ctx)
	back := second.join(t, ctx, f.ticket("kim"))
	if got := back.Welcome().Inventory; !playtest.SameItems(got, acked) {
		t.Fatalf("inventory after kill -9: %+v, want exactly the acknowledged %+v", got, acked)
	}
	s, err := back.WaitFor(ctx, func(s client.State) bool { return s.Sees(back.Welcome().PlayerID) })
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range s.Entities {
		for _, l := range taken {
			if e.Kind == protocol.EntityLoot && math.Abs(float64(e.X-l.X)) < 0.01 && math.Abs(float64(e.Y-l.Y)) < 0.01 {
				t.Fatalf("picked-up loot is on the ground again at (%v,%v)", e.X, e.Y)
			}
		}
	}
}

// TestResumeOnTheReplacementProcess kills the map's process (SIGKILL, or
// SIGTERM: a drain) under a player whose client reconnects by itself, and
// starts a replacement on the same address: the client resumes its seat
// there (no new ticket) with its acknowledged items, where it stood give
// or take one checkpoint interval of walking.
func TestResumeOnTheReplacementProcess(t *testing.T) {
	pg := startPostgres(t)
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			dsn := newDatabase(t, pg, "resume"+strconv.Itoa(int(sig)))
			resumeOnReplacement(t, newFixture(t, "ROOMKEEPER_DATABASE_URL="+dsn, "POD_NAME=demo-town"), sig)
		})
	}
}

func resumeOnReplacement(t *testing.T, f *fixture, sig syscall.Signal) {
	const lootMap = `{"seed":5,"width":256,"height":256,"lootDensity":1}`
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	first := f.start(lootMap)
	first.waitReady(t, ctx)
	c, err := client.Dial(ctx, "ws://"+first.game+"/ws", protocol.Hello{Ticket: f.ticket("kai")},
		client.Options{Reconnect: &client.Reconnect{Attempts: 30, MaxDelay: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	loot := nearestLoot(t, ctx, c)
	walkTo(t, ctx, c, loot)
	ack, err := c.Do(ctx, protocol.FeatureLoot, protocol.ActionPickup, protocol.LootPickup{Entity: loot.ID})
	if err != nil || !ack.OK {
		t.Fatalf("pickup: %+v %v", ack, err)
	}
	before := c.Snapshot().Self
	if err := first.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	_ = first.cmd.Wait()

	f.start(lootMap, "--listen="+first.game)
	s, err := c.WaitFor(ctx, func(s client.State) bool { return s.Resumes == 1 && s.Sees(c.Welcome().PlayerID) })
	if err != nil {
		t.Fatalf("no resume on the replacement: %v", err)
	}
	if w := c.Welcome(); !w.Resumed || !playtest.SameItems(w.Inventory, ack.Inventory) || s.Rejoins != 0 {
		t.Fatalf("welcome on the replacement: resumed %v, inventory %+v (want %+v), rejoins %d", w.Resumed, w.Inventory, ack.Inventory, s.Rejoins)
	}
	// The fixture checkpoints every 200 ms: at most that much walking is lost.
	if d := math.Hypot(float64(s.Self.X-before.X), float64(s.Self.Y-before.Y)); d > 0.2*float64(c.Welcome().PlayerSpeed)+1 {
		t.Errorf("resumed %.1f units from where the player stood", d)
	}
	if ack, err := c.Do(ctx, protocol.FeatureInventory, protocol.ActionDrop, protocol.InventoryDrop{Item: ack.Inventory[0].ID}); err != nil || !ack.OK {
		t.Fatalf("a drop after the resume: %+v %v", ack, err)
	}
}

func waitExit(ctx context.Context, cmd *exec.Cmd) error {
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		return err
	case <-ctx.Done():
		return errors.New("did not exit")
	}
}

// serving reads the JSON log until the "Serving" line and returns the game
// and HTTP addresses.
func serving(t *testing.T, stderr io.Reader) (game, ops string) {
	t.Helper()
	lines := bufio.NewScanner(stderr)
	for lines.Scan() {
		if addrs, ok := serverlog.Serving(lines.Bytes()); ok {
			go func() { // keep draining so the server never blocks on its log
				for lines.Scan() {
				}
			}()
			return addrs.Game, addrs.HTTP
		}
	}
	t.Fatalf("roomserver exited before serving: %v", errors.Join(lines.Err(), errors.New("no Serving line")))
	return "", ""
}
