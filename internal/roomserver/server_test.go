package roomserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/roomkeeper/roomkeeper/internal/content"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/store"
	"github.com/roomkeeper/roomkeeper/internal/testenv"
	"github.com/roomkeeper/roomkeeper/internal/token"
	"github.com/roomkeeper/roomkeeper/internal/wait"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// testMap is an open meadow: small enough to walk across in a test.
const testMap = `{"seed":42,"width":512,"height":512,"biome":"meadow","npcDensity":0.02}`

// harness is a real room server on an httptest listener with real
// WebSocket clients.
type harness struct {
	t      testing.TB
	srv    *Server
	http   *httptest.Server
	keys   token.StaticKeys
	signer *token.Signer
	now    atomic.Int64 // offset added to the server's clock, for expiry tests
	url    string
	cfg    Config
	cancel context.CancelFunc
	done   chan struct{}
}

func newHarness(t testing.TB, tune func(*Config)) *harness {
	t.Helper()
	return newHarnessWith(t, tune, nil, nil)
}

// newHarnessWith runs the server on st (nil: no database) with keys (nil:
// fresh ones), so several servers can share a database and keys.
func newHarnessWith(t testing.TB, tune func(*Config), st store.Store, keys *token.StaticKeys) *harness {
	t.Helper()
	return newHarnessOn(t, tune, st, keys, nil)
}

// newHarnessOn is newHarnessWith with a directory for the map's portals.
func newHarnessOn(t testing.TB, tune func(*Config), st store.Store, keys *token.StaticKeys, dir Directory) *harness {
	t.Helper()
	if keys == nil {
		key, err := token.NewKey()
		if err != nil {
			t.Fatal(err)
		}
		keys = &token.StaticKeys{Current: key}
	}
	h := &harness{t: t, keys: *keys}
	clock := func() time.Time { return time.Now().Add(time.Duration(h.now.Load())) }
	h.signer = token.NewSigner(h.keys, time.Now)
	cfg := DefaultConfig()
	cfg.Room, cfg.Map, cfg.Instance, cfg.MapConfig = "demo", "town", "demo-town", json.RawMessage(testMap)
	if tune != nil {
		tune(&cfg)
	}
	deps := Deps{Keys: h.keys, Replay: token.NewMemoryReplayGuard(clock), Clock: clock, Directory: dir}
	if st != nil {
		deps.Store, deps.Replay = st, store.NewReplayGuard(st)
	}
	h.cfg = cfg
	var err error
	h.srv, err = New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel, h.done = cancel, make(chan struct{})
	go func() { h.srv.Run(ctx); close(h.done) }()
	h.http = httptest.NewServer(h.srv.Handler())
	h.url = "ws" + strings.TrimPrefix(h.http.URL, "http") + "/ws"
	t.Cleanup(h.crash)
	return h
}

// crash stops the server the hard way: no goodbye, no final checkpoint.
func (h *harness) crash() {
	h.cancel()
	<-h.done
	h.http.CloseClientConnections()
	h.http.Close()
}

// ticket mints a join ticket for the harness's map; opts change its claims.
func (h *harness) ticket(opts ...func(*token.Claims)) string {
	c := token.Claims{Type: token.TypeJoin, Subject: "user-1", Character: "char-" + randomID(), Room: "demo", Map: h.cfg.Instance}
	for _, o := range opts {
		o(&c)
	}
	raw, _, err := h.signer.Sign(c, min(10*time.Second, h.cfg.TokenTTL))
	if err != nil {
		h.t.Fatal(err)
	}
	return raw
}

var ids atomic.Int64

// randomID is unique per call, so every ticket seats a new character.
func randomID() string { return strconv.FormatInt(ids.Add(1), 10) }

func (h *harness) join(opts ...func(*token.Claims)) *client.Client {
	h.t.Helper()
	return h.dial(protocol.Hello{Ticket: h.ticket(opts...)}, client.Options{})
}

func (h *harness) dial(hello protocol.Hello, opts client.Options) *client.Client {
	h.t.Helper()
	c, err := client.Dial(context.Background(), h.url, hello, opts)
	if err != nil {
		h.t.Fatalf("dial: %v", err)
	}
	h.t.Cleanup(func() { _ = c.Close() })
	return c
}

// refused dials and expects the hello to be refused with code.
func (h *harness) refused(hello protocol.Hello, code protocol.Code) {
	h.t.Helper()
	_, err := client.Dial(context.Background(), h.url, hello, client.Options{})
	var se *client.ServerError
	if !errors.As(err, &se) || se.Code != code {
		h.t.Fatalf("hello answered %v, want %s", err, code)
	}
}

func waitCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// poll waits up to 20 s, this package's deadline, for cond to hold.
func poll(t testing.TB, cond func() error) {
	t.Helper()
	wait.Eventually(t, 20*time.Second, "a condition", cond)
}

// waitFor waits until cond holds for c's state.
func waitFor(t testing.TB, c *client.Client, what string, cond func(client.State) bool) client.State {
	t.Helper()
	s, err := c.WaitFor(waitCtx(t), cond)
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
	return s
}

// walk moves c n steps along (dx, dy), in batches the server's input
// backlog takes, and waits until the server applied them all.
func walk(t testing.TB, c *client.Client, dx, dy float32, n int) client.State {
	t.Helper()
	var last uint32
	for sent := 0; sent < n; {
		for i := 0; i < 6 && sent < n; i, sent = i+1, sent+1 {
			seq, err := c.Move(dx, dy)
			if err != nil {
				t.Fatal(err)
			}
			last = seq
		}
		waitFor(t, c, "inputs applied", func(s client.State) bool { return s.AckSeq >= last })
	}
	return c.Snapshot()
}

func TestJoinWelcomesAndSnapshots(t *testing.T) {
	h := newHarness(t, nil)
	c := h.join()
	w := c.Welcome()
	if w.PlayerID == 0 || w.Room != "demo" || w.Map != "town" || w.Instance != "demo-town" || w.ResumeToken == "" ||
		w.TickRate != 30 || w.SnapshotRate != 10 || w.MapHash != h.srv.MapHash() || w.Codec != protocol.CodecJSON {
		t.Fatalf("welcome = %+v", w)
	}
	if wilds, _ := content.Named("wilds"); w.ContentHash != wilds.Definitions().Hash() {
		t.Errorf("welcome's contentHash %q, want the town's pack's definitions' (the join API's)", w.ContentHash)
	}
	s := waitFor(t, c, "a snapshot showing me", func(s client.State) bool { return s.Sees(w.PlayerID) })
	if s.Self.Kind != protocol.EntityPlayer || s.Self.HP == 0 {
		t.Errorf("self = %+v", s.Self)
	}
	if c.Static().Hash != h.srv.MapHash() {
		t.Error("the client built another static map")
	}
}

func TestInputsAreAcknowledgedInOrderAndPredicted(t *testing.T) {
	h := newHarness(t, nil)
	c := h.join()
	start := waitFor(t, c, "first snapshot", func(s client.State) bool { return s.Snapshots > 0 })
	var acks []uint32
	for range 4 {
		s := walk(t, c, 1, 0, 6)
		acks = append(acks, s.AckSeq)
	}
	for i := 1; i < len(acks); i++ {
		if acks[i] <= acks[i-1] {
			t.Fatalf("ackSeq went %v: not in order", acks)
		}
	}
	s := waitFor(t, c, "the last input", func(s client.State) bool { return s.AckSeq == 24 && s.Pending == 0 })
	if s.Self.X <= start.Self.X {
		t.Errorf("moved from x=%v to x=%v walking east", start.Self.X, s.Self.X)
	}
	if s.PredictedX != s.Self.X || s.PredictedY != s.Self.Y {
		t.Errorf("with nothing pending the prediction (%v,%v) must equal the server (%v,%v)", s.PredictedX, s.PredictedY, s.Self.X, s.Self.Y)
	}
}

func TestPlayersSeeEachOtherOnlyInsideAOI(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.CellSize, c.Hysteresis = 32, 4
		c.Sim.PlayerSpeed = 300
	})
	a, b := h.join(), h.join()
	aID, bID := a.Welcome().PlayerID, b.Welcome().PlayerID
	waitFor(t, a, "a sees b", func(s client.State) bool { return s.Sees(bID) })
	waitFor(t, b, "b sees a", func(s client.State) bool { return s.Sees(aID) })

	walk(t, a, 0, -1, 30) // 300 units north and south: far outside 3x3 cells of 32
	walk(t, b, 0, 1, 30)
	waitFor(t, a, "a loses sight of b", func(s client.State) bool { return !s.Sees(bID) && s.Sees(aID) })
	waitFor(t, b, "b loses sight of a", func(s client.State) bool { return !s.Sees(aID) && s.Sees(bID) })

	// b walks back to a, steering by both players' positions, because a
	// rock on the way may have stopped either of them short.
	for range 100 {
		if a.Snapshot().Sees(bID) {
			return
		}
		from, to := b.Snapshot().Self, a.Snapshot().Self
		dx, dy := to.X-from.X, to.Y-from.Y
		l := float32(math.Hypot(float64(dx), float64(dy)))
		walk(t, b, dx/l, dy/l, 3)
	}
	t.Fatal("b walked back to a, but a never saw b again")
}

func TestResumeWithinGraceKeepsSeatAndState(t *testing.T) {
	h := newHarness(t, nil)
	c := h.join()
	before := walk(t, c, 1, 0, 12)
	w := c.Welcome()
	if err := c.Drop(); err != nil {
		t.Fatal(err)
	}
	r := h.dial(protocol.Hello{Resume: w.ResumeToken, LastSeq: before.AckSeq}, client.Options{})
	rw := r.Welcome()
	if !rw.Resumed || rw.PlayerID != w.PlayerID {
		t.Fatalf("resume welcome = %+v, want the same player resumed", rw)
	}
	s := waitFor(t, r, "a snapshot after resume", func(s client.State) bool { return s.Sees(w.PlayerID) })
	if s.Self.X != before.Self.X || s.Self.Y != before.Self.Y {
		t.Errorf("resumed at (%v,%v), left at (%v,%v)", s.Self.X, s.Self.Y, before.Self.X, before.Self.Y)
	}
}

func TestResumeAfterGraceIsRefused(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.ResumeGrace = 200 * time.Millisecond })
	watcher := h.join()
	c := h.join()
	id := c.Welcome().PlayerID
	waitFor(t, watcher, "the player", func(s client.State) bool { return s.Sees(id) })
	resumeToken := c.Welcome().ResumeToken
	if err := c.Drop(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, watcher, "the seat released after the grace", func(s client.State) bool { return !s.Sees(id) })
	h.now.Add(int64(resumeTTL(h.cfg.ResumeGrace) + token.DefaultLeeway + time.Second))
	h.refused(protocol.Hello{Resume: resumeToken}, protocol.CodeTokenExpired)
}

func TestBadTicketsAreRefusedWithTheirCode(t *testing.T) {
	h := newHarness(t, nil)
	other, err := token.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	forged, _, err := token.NewSigner(token.StaticKeys{Current: other}, time.Now).Sign(token.Claims{Type: token.TypeJoin,
		Subject: "u", Character: "c", Room: "demo", Map: "demo-town"}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	h.refused(protocol.Hello{Ticket: forged}, protocol.CodeUnauthorized)
	h.refused(protocol.Hello{Ticket: "not-a-jwt"}, protocol.CodeUnauthorized)
	h.refused(protocol.Hello{}, protocol.CodeUnauthorized)
	h.refused(protocol.Hello{Ticket: h.ticket(func(c *token.Claims) { c.Map = "demo-crypt" })}, protocol.CodeWrongMap)

	used := h.ticket()
	h.dial(protocol.Hello{Ticket: used}, client.Options{})
	h.refused(protocol.Hello{Ticket: used}, protocol.CodeTokenReplayed)

	expiring := h.ticket()
	h.now.Store(int64(time.Minute))
	h.refused(protocol.Hello{Ticket: expiring}, protocol.CodeTokenExpired)
}

func TestRoomFull(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxPlayers = 1 })
	h.join()
	h.refused(protocol.Hello{Ticket: h.ticket()}, protocol.CodeRoomFull)
}

func TestOversizedMessageClosesWith1009(t *testing.T) {
	h := newHarness(t, nil)
	c := h.join()
	big := `{"v":1,"kind":"ping","payload":{"pad":"` + strings.Repeat("x", protocol.MaxMessageBytes) + `"}}`
	if err := c.SendRaw(1, []byte(big)); err != nil {
		t.Fatal(err)
	}
	s, _ := c.WaitFor(waitCtx(t), func(s client.State) bool { return s.Closed != nil })
	if !closedWith(s.Closed, 1009) {
		t.Fatalf("closed with %v, want 1009 (message too big)", s.Closed)
	}
}

func TestMalformedMessagesGetBadRequestAndTheConnectionSurvives(t *testing.T) {
	h := newHarness(t, nil)
	c := h.join()
	for _, raw := range []string{`{not json`, `[]`, `{"v":2,"kind":"ping"}`, `{"v":1,"kind":"welcome"}`,
		`{"v":1,"kind":"command","feature":"movement","action":"fly"}`, `{"v":1,"kind":"command","feature":"movement","action":"input","payload":{"inputs":"x"}}`} {
		if err := c.SendRaw(1, []byte(raw)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, c, "six bad_request answers", func(s client.State) bool {
		n := 0
		for _, e := range s.Errors {
			if e.Code == protocol.CodeBadRequest {
				n++
			}
		}
		for _, a := range s.Acks {
			if a.Code == protocol.CodeBadRequest {
				n++
			}
		}
		return n == 6
	})
	if err := c.Ping(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, c, "a pong on the same connection", func(s client.State) bool { return len(s.RTTs) > 0 })
}

func TestInvalidMovementIsRefused(t *testing.T) {
	h := newHarness(t, nil)
	c := h.join()
	seq, err := c.Command(protocol.FeatureMovement, protocol.ActionInput, protocol.MovementInput{Inputs: []protocol.Input{{Seq: 1, X: 30}}})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, c, "invalid_action", func(s client.State) bool {
		for _, a := range s.Acks {
			if a.Seq == seq && !a.OK && a.Code == protocol.CodeInvalidAction {
				return true
			}
		}
		return false
	})
}

func TestFloodIsAnsweredRateLimited(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MessagesPerSecond, c.MessageBurst = 5, 10 })
	c := h.join()
	for range 40 {
		if err := c.Ping(); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, c, "rate_limited", func(s client.State) bool {
		for _, e := range s.Errors {
			if e.Code == protocol.CodeRateLimited {
				return true
			}
		}
		return false
	})
	if c.Snapshot().Closed != nil {
		t.Fatal("a short flood closed the connection")
	}
}

func TestHealthAndMetrics(t *testing.T) {
	h := newHarness(t, nil)
	h.join()
	for path, want := range map[string]string{
		"/healthz": "ok tick=", "/readyz": "ok tick=",
		"/metrics": "roomkeeper_roomserver_tick_duration_seconds",
	} {
		var body string
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) && !strings.Contains(body, want) {
			body = get(t, h.http.URL+path)
		}
		if !strings.Contains(body, want) {
			t.Errorf("%s = %q, want %q", path, body, want)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for body := ""; !strings.Contains(body, "roomkeeper_roomserver_players 1"); body = get(t, h.http.URL+"/metrics") {
		if time.Now().After(deadline) {
			t.Fatalf("metrics do not count the player:\n%s", body)
		}
	}
}

func TestShutdownTellsClientsAndStopsAdmitting(t *testing.T) {
	h := newHarness(t, nil)
	c := h.join()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	s, _ := c.WaitFor(waitCtx(t), func(s client.State) bool { return s.Closed != nil })
	shutdownEvent := false
	for _, e := range s.Events {
		shutdownEvent = shutdownEvent || e.Type == protocol.EventServerShutdown
	}
	if !shutdownEvent || !closedWith(s.Closed, 1001) {
		t.Errorf("events %+v, closed %v: want server_shutdown then 1001", s.Events, s.Closed)
	}
	if resp, err := http.Get(h.http.URL + "/readyz"); err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("readyz while draining: %v %v", resp, err)
	} else {
		_ = resp.Body.Close()
	}
}

func get(t testing.TB, url string) string {
	t.Helper()
	_, body := testenv.Get(t, context.Background(), nil, url)
	return body
}

// TestResumeTokensWorkOnce: every resume hands out a new token and the one
// used is dead, so a stolen token is worth one resume at most.
func TestResumeTokensWorkOnce(t *testing.T) {
	h := newHarness(t, nil)
	c := h.join()
	first := c.Welcome().ResumeToken
	if err := c.Drop(); err != nil {
		t.Fatal(err)
	}
	r := h.dial(protocol.Hello{Resume: first}, client.Options{})
	second := r.Welcome().ResumeToken
	if second == "" || second == first {
		t.Fatalf("the resume welcome's token %q, want a new one", second)
	}
	if err := r.Drop(); err != nil {
		t.Fatal(err)
	}
	h.refused(protocol.Hello{Resume: first}, protocol.CodeTokenReplayed)
	again := h.dial(protocol.Hello{Resume: second}, client.Options{})
	if !again.Welcome().Resumed || again.Welcome().PlayerID != c.Welcome().PlayerID {
		t.Fatalf("resume with the new token: %+v", again.Welcome())
	}
}

// TestADisplacedConnectionIsToldWhy: a connection whose seat another
// connection resumed gets an error with a code before its close.
func TestADisplacedConnectionIsToldWhy(t *testing.T) {
	h := newHarness(t, nil)
	c := h.join()
	h.dial(protocol.Hello{Resume: c.Welcome().ResumeToken}, client.Options{})
	waitFor(t, c, "an unauthorized error", func(s client.State) bool {
		return slices.ContainsFunc(s.Errors, func(e protocol.Error) bool { return e.Code == protocol.CodeUnauthorized })
	})
}

// TestDetachedGuestSeatsDoNotFillAMap: guests who join and drop cannot
// hold a map full; connected guests and dropped players keep their seats.
func TestDetachedGuestSeatsDoNotFillAMap(t *testing.T) {
	const max = 3
	h := newHarness(t, func(c *Config) { c.MaxPlayers = max })
	guest := func(c *token.Claims) { c.Subject, c.Character = guestPrefix+randomID(), guestPrefix+randomID() }
	for range max {
		if err := h.join(guest).Drop(); err != nil {
			t.Fatal(err)
		}
	}
	poll(t, func() error { // the server has seen the drops
		h.srv.mu.Lock()
		defer h.srv.mu.Unlock()
		if n := len(h.srv.sessions); n != 0 {
			return fmt.Errorf("%d sessions still open", n)
		}
		return nil
	})
	var players []*client.Client
	for range max { // each takes the seat of a dropped guest
		players = append(players, h.join())
	}
	h.refused(protocol.Hello{Ticket: h.ticket(guest)}, protocol.CodeRoomFull) // connected players count
	for _, p := range players {
		if err := p.Drop(); err != nil {
			t.Fatal(err)
		}
	}
	h.refused(protocol.Hello{Ticket: h.ticket(guest)}, protocol.CodeRoomFull) // and dropped players keep theirs for the grace
	// The guests whose seats were taken leave the world on the tick
	// goroutine, after their hello's answer.
	poll(t, func() error {
		if n := h.srv.Stats().Players; n != max {
			return fmt.Errorf("players in the world: %d, want %d", n, max)
		}
		return nil
	})
}

// TestOnlyCommandsAreAcked: a refused message that is not a command (a
// ping without payload, a second hello) is answered with error, never
// ack, even when it carries a seq.
func TestOnlyCommandsAreAcked(t *testing.T) {
	h := newHarness(t, nil)
	c := h.join()
	for _, raw := range []string{`{"v":1,"kind":"ping","seq":5}`, `{"v":1,"kind":"hello","seq":6,"payload":{}}`} {
		if err := c.SendRaw(websocket.TextMessage, []byte(raw)); err != nil {
			t.Fatal(err)
		}
	}
	s := waitFor(t, c, "two bad_request errors", func(s client.State) bool {
		return len(slices.DeleteFunc(slices.Clone(s.Errors), func(e protocol.Error) bool { return e.Code != protocol.CodeBadRequest })) == 2
	})
	if len(s.Acks) != 0 {
		t.Errorf("acks for messages that are not commands: %+v", s.Acks)
	}
}

// TestDroppingWhatYouDoNotCarryIsNotOwner: docs/protocol.md's code for
// acting on an item that is not yours.
func TestDroppingWhatYouDoNotCarryIsNotOwner(t *testing.T) {
	h := newHarness(t, nil)
	c := h.join()
	if ack := command(t, c, protocol.FeatureInventory, protocol.ActionDrop, protocol.InventoryDrop{Item: "demo-town/loot/1"}); ack.OK || ack.Code != protocol.CodeNotOwner {
		t.Fatalf("dropping an item not carried: %+v, want not_owner", ack)
	}
}

// TestSpawnPointsOverrideSpreadsPlayers: --spawn-points rebuilds the map
// with that many spawn points, the welcome carries the config it was built
// from (the client's world hash matches), and joining players start apart.
func TestSpawnPointsOverrideSpreadsPlayers(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.MapConfig = []byte(`{"seed":3,"width":1024,"height":1024}`)
		c.SpawnPoints = 8
	})
	var at []protocol.EntityState
	for range 4 {
		c := h.join() // client.Dial refuses a world whose hash differs from the server's
		if !strings.Contains(string(c.Welcome().MapConfig), `"spawnPoints":8`) {
			t.Fatalf("welcome mapConfig %s lacks the override", c.Welcome().MapConfig)
		}
		s := waitFor(t, c, "itself", func(s client.State) bool { return s.Sees(c.Welcome().PlayerID) })
		for _, p := range at {
			if dist(p, s.Self) < 32 {
				t.Fatalf("a player started at (%v,%v), %v from another", s.Self.X, s.Self.Y, dist(p, s.Self))
			}
		}
		at = append(at, s.Self)
	}
}

// TestPlayerSpeedIsAMapSetting: a map's playerSpeed is what welcome tells
// clients to predict with, and how far the server moves a player.
func TestPlayerSpeedIsAMapSetting(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.MapConfig = []byte(`{"seed":42,"width":512,"height":512,"playerSpeed":96}`)
	})
	c := h.join()
	if got := c.Welcome().PlayerSpeed; got != 96 {
		t.Fatalf("welcome playerSpeed = %v, want 96", got)
	}
	const inputs = 15 // 96 / 30 Hz: 3.2 units each, 48 in all
	farthest := float32(0)
	for _, d := range [][2]float32{{1, 0}, {-1, 0}, {0, 1}, {0, -1}} { // walls may stop some
		from := waitFor(t, c, "itself", func(s client.State) bool { return s.Sees(c.Welcome().PlayerID) }).Self
		to := walk(t, c, d[0], d[1], inputs).Self
		farthest = max(farthest, dist(from, to))
	}
	if farthest < 47 || farthest > 49 {
		t.Errorf("%d inputs moved the player at most %v units, want 48 (96 units/s at 30 Hz)", inputs, farthest)
	}
}

// TestOnlyPlayingCountsAsActive: a connection kept open by pings alone
// stops counting as an active player once ActiveWindow passes without an
// input or a command; one command makes it active again.
func TestOnlyPlayingCountsAsActive(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.ActiveWindow = 300 * time.Millisecond })
	idle, playing := h.join(), h.join()
	if n := h.srv.ActivePlayers(); n != 2 {
		t.Fatalf("%d active just after joining, want 2", n)
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() { // one plays on, the other only pings
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
				_, _ = playing.Move(1, 0)
				_ = idle.Ping()
			}
		}
	}()
	poll(t, func() error {
		if n := h.srv.ActivePlayers(); n != 1 {
			return fmt.Errorf("%d active, want the one that plays", n)
		}
		return nil
	})
	if _, err := idle.Move(0, 1); err != nil {
		t.Fatal(err)
	}
	poll(t, func() error {
		if n := h.srv.ActivePlayers(); n != 2 {
			return fmt.Errorf("%d active after the idle one moved, want 2", n)
		}
		return nil
	})
	if n := h.srv.Stats().Players; n != 2 {
		t.Fatalf("%d players in the world, want both: idle is not gone", n)
	}
}

// TestAMapRunsTheGameContentItIsGiven: a map whose config names a pack
// that is not built in runs the pack it is given (the operator's
// --content-file), and its welcome names that pack's definitions; given
// none, the server refuses to start rather than run another pack.
func TestAMapRunsTheGameContentItIsGiven(t *testing.T) {
	pack, _ := content.Named("wilds")
	pack.Name = "safari"
	pack.Enemies[0].Name = "lion"
	withPack := func(c *Config) {
		c.MapConfig = json.RawMessage(`{"seed":42,"width":512,"height":512,"biome":"meadow","npcDensity":0.02,"content":"safari"}`)
	}
	h := newHarness(t, func(c *Config) { withPack(c); c.Sim.Content = pack })
	if w := h.join().Welcome(); w.ContentHash != pack.Definitions().Hash() {
		t.Errorf("welcome's contentHash %q, want the given pack's", w.ContentHash)
	}
	cfg := DefaultConfig()
	cfg.Room, cfg.Map, cfg.Instance = "demo", "town", "demo-town"
	withPack(&cfg)
	key, _ := token.NewKey()
	if _, err := New(cfg, Deps{Keys: token.StaticKeys{Current: key}}); err == nil || !strings.Contains(err.Error(), "safari") {
		t.Errorf("a map naming a pack it was not given started: %v", err)
	}
}
