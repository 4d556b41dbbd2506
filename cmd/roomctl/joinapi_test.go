package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/joinapi"
	"github.com/roomkeeper/roomkeeper/internal/joinflags"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/roomserver"
	"github.com/roomkeeper/roomkeeper/internal/shards"
	"github.com/roomkeeper/roomkeeper/internal/store"
	"github.com/roomkeeper/roomkeeper/internal/testenv"
	"github.com/roomkeeper/roomkeeper/internal/token"
	"github.com/roomkeeper/roomkeeper/internal/wait"
	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// TestJoinAPIPlaysAgainstARealServer runs roomctl characters, join and bots
// through the real join API handler against an in-process room server,
// both on one real Postgres. Only the Kubernetes objects the join API
// reads come from a fake reader: internal/joinapi tests that part against
// a real API server.
func TestJoinAPIPlaysAgainstARealServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dsn, keys := databaseAndKeys(t)
	db, endpoint := startRoomServer(ctx, t, keys, dsn, 40)
	api := startJoinAPI(t, keys, endpoint, dsn, 40)
	const key = "roomctl-test-auth-key-0123456789"
	flags := []string{"--join-api", api, "--namespace", "games", "--room", "demo"}

	out := roomctl(t, append([]string{"characters", "--auth-key", key}, append(flags, "create", "Ayla")...)...)
	ayla := onlyRow(t, out)
	if ayla[1] != "Ayla" || ayla[2] != "*" {
		t.Fatalf("create printed %q, want Ayla marked active", out)
	}
	out = roomctl(t, append([]string{"characters", "--auth-key", key}, append(flags, "create", "--active", "Bram")...)...)
	bram := onlyRow(t, out)
	out = roomctl(t, append([]string{"characters", "--auth-key", key}, flags...)...)
	if !strings.Contains(out, ayla[0]) || !strings.Contains(out, bram[0]+"  Bram  *") {
		t.Fatalf("list printed %q, want Ayla and Bram, Bram active", out)
	}

	// rooms shows the lobby: the room, its phase and its players.
	out = roomctl(t, "rooms", "--join-api", api, "--namespace", "games")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[0], "NAMESPACE") ||
		strings.Join(strings.Fields(lines[1]), " ") != "games demo Running yes 2/40 town 2/40" {
		t.Fatalf("rooms printed %q", out)
	}

	// join plays the active character on the room server, which claims its lease.
	if err := run(append([]string{"join", "--auth-key", key, "--duration", "1500ms"}, flags...)); err != nil {
		t.Fatalf("join: %v", err)
	}
	if holder := leaseHolder(ctx, t, db, bram[0]); holder != "demo-town" {
		t.Fatalf("Bram's authority lease is held by %q, want demo-town", holder)
	}
	if err := run(append([]string{"join", "--auth-key", key, "--character", ayla[0], "--duration", "1s"}, flags...)); err != nil {
		t.Fatalf("join --character: %v", err)
	}
	if holder := leaseHolder(ctx, t, db, ayla[0]); holder != "demo-town" {
		t.Fatalf("Ayla's authority lease is held by %q, want demo-town", holder)
	}

	if err := run(append([]string{"bots", "--count", "3", "--duration", "1500ms"}, flags...)); err != nil {
		t.Fatalf("guest bots: %v", err)
	}
	if err := run(append([]string{"bots", "--auth-key-prefix", "bot", "--count", "2", "--duration", "1500ms"}, flags...)); err != nil {
		t.Fatalf("keyed bots: %v", err)
	}
	joinAPI := &client.JoinAPI{BaseURL: api}
	for _, botKey := range []string{"bot-0", "bot-1"} {
		list, err := joinAPI.Characters(ctx, "games", "demo", botKey)
		if err != nil || len(list) != 1 || list[0].Name != store.DefaultCharacterName {
			t.Fatalf("%s's characters: %+v, %v; want the default one its first join made", botKey, list, err)
		}
	}

	playInAParty(ctx, t, api, flags)

	out = roomctl(t, append([]string{"characters", "--auth-key", key}, append(flags, "delete", ayla[0])...)...)
	if strings.TrimSpace(out) != "deleted "+ayla[0] {
		t.Fatalf("delete printed %q", out)
	}
	err := run(append([]string{"join", "--auth-key", key, "--character", ayla[0], "--duration", "1s"}, flags...))
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || apiErr.Code != "not_found" {
		t.Fatalf("joining a deleted character: %v, want the join API's not_found", err)
	}
}

// playInAParty: roomctl party creates a party and invites to it, a join
// with its token plays, one without is refused, and the players of one
// --party name share the one party the command created.
func playInAParty(ctx context.Context, t *testing.T, api string, flags []string) {
	t.Helper()
	var leader, member client.Party
	if err := json.Unmarshal([]byte(roomctl(t, append(append([]string{"party"}, flags...), "create")...)), &leader); err != nil ||
		leader.Role != token.RoleLeader || leader.Party == "" {
		t.Fatalf("party create printed %+v (%v), want a leader's party token", leader, err)
	}
	out := roomctl(t, append(append([]string{"party", "--id", leader.Party, "--party-token", leader.Token}, flags...), "invite")...)
	if err := json.Unmarshal([]byte(out), &member); err != nil || member.Role != token.RoleMember || member.Party != leader.Party {
		t.Fatalf("party invite printed %q (%v), want a member of %s", out, err, leader.Party)
	}
	if err := run(append([]string{"join", "--party-token", member.Token, "--duration", "500ms"}, flags...)); err != nil {
		t.Fatalf("join --party-token: %v", err)
	}
	var apiErr *client.APIError
	if err := run(append(append([]string{"party", "--id", leader.Party, "--party-token", member.Token}, flags...), "invite")); !errors.As(err, &apiErr) || apiErr.Code != "not_owner" {
		t.Fatalf("a member inviting: %v, want not_owner", err)
	}
	if err := run(append([]string{"bots", "--party", "crew", "--count", "3", "--duration", "1s"}, flags...)); err != nil {
		t.Fatalf("bots --party: %v", err)
	}
	j := joinflags.Flags{URL: api, Namespace: "games"}
	var parties joinflags.Parties
	var first client.Party
	for i := range 3 {
		p, err := parties.Token(ctx, &j, "demo", "crew", "")
		switch {
		case err != nil:
			t.Fatalf("party token %d: %v", i, err)
		case i == 0 && p.Role != token.RoleLeader, i > 0 && (p.Role != token.RoleMember || p.Party != first.Party):
			t.Fatalf("party token %d is %+v, want the first to lead and the rest to join its party", i, p)
		case i == 0:
			first = p
		}
	}
}

// roomctl runs the command and returns what it printed on stdout.
func roomctl(t *testing.T, args ...string) string {
	t.Helper()
	var buf bytes.Buffer
	old := stdout
	stdout = &buf
	defer func() { stdout = old }()
	if err := run(args); err != nil {
		t.Fatalf("roomctl %s: %v", strings.Join(args, " "), err)
	}
	return buf.String()
}

// onlyRow is the fields of the one row of a characters table.
func onlyRow(t *testing.T, out string) []string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "ID") {
		t.Fatalf("printed %q, want a header and one row", out)
	}
	fields := strings.Fields(lines[1])
	if len(fields) == 3 { // not active: the ACTIVE column is blank
		fields = []string{fields[0], fields[1], "", fields[2]}
	}
	return fields
}

// databaseAndKeys starts a Postgres of the test's own, with a database
// for the room, and makes the room's keys.
func databaseAndKeys(t *testing.T) (string, token.KeySet) {
	t.Helper()
	pg, err := testenv.StartPostgres()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Stop() })
	dsn, err := pg.NewDatabase("roomctl")
	if err != nil {
		t.Fatal(err)
	}
	keys, err := token.Rotate(token.KeySet{})
	if err != nil {
		t.Fatal(err)
	}
	return dsn, keys
}

// startRoomServer runs demo-town in process on the database, with seats
// players at most, and waits until it is ready (its loot restored).
func startRoomServer(ctx context.Context, t *testing.T, keys token.KeySet, dsn string, seats int) (*store.Postgres, string) {
	t.Helper()
	db, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	cfg := roomserver.DefaultConfig()
	cfg.Room, cfg.Map, cfg.Instance, cfg.MaxPlayers = "demo", "town", "demo-town", seats
	cfg.MapConfig = json.RawMessage(`{"seed":1,"width":256,"height":256}`)
	srv, err := roomserver.New(cfg, roomserver.Deps{Keys: token.StaticKeys(keys), Replay: store.NewReplayGuard(db), Store: db})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	go srv.Run(runCtx)
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	wait.Eventually(t, 30*time.Second, "the room server ready", wait.True(func() bool { return ready(hs.URL) }, "/readyz is not 200"))
	return db, "ws" + strings.TrimPrefix(hs.URL, "http") + "/ws"
}

// ready reports whether the room server at base answers /readyz with 200.
func ready(base string) bool {
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// startJoinAPI serves the real join API handler over the objects the
// operator would have made for a ready room "demo" in namespace "games".
func startJoinAPI(t *testing.T, keys token.KeySet, endpoint, dsn string, seats int32) string {
	t.Helper()
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(gamev1.AddToScheme(scheme))
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: "games"} }
	room := &gamev1.GameRoom{ObjectMeta: meta("demo"), Spec: gamev1.GameRoomSpec{
		DefaultMap: "town",
		Maps:       []gamev1.GameMap{{Name: "town"}},
		RoomSettings: gamev1.RoomSettings{
			Database:         &gamev1.DatabaseRef{SecretRef: gamev1.SecretKeyRef{Name: "db", Key: "dsn"}},
			Tokens:           gamev1.TokenPolicy{TTL: &metav1.Duration{Duration: 10 * time.Second}},
			MaxPlayersPerMap: seats,
		},
	}, Status: gamev1.GameRoomStatus{Phase: gamev1.GameRoomRunning, Players: 2,
		Maps: []gamev1.MapDirectoryEntry{{Name: "town", Instance: "demo-town", Phase: gamev1.MapReady, Players: 2}}}}
	room.UID = "demo-uid"
	mi := shards.New(room, room.Spec.Maps[0], 1) // as the operator makes it
	mi.Status = gamev1.MapInstanceStatus{Endpoint: endpoint, Conditions: []metav1.Condition{{
		Type: gamev1.ConditionReady, Status: metav1.ConditionTrue, Reason: gamev1.ReasonPodReady,
	}}}
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(room, mi,
		&corev1.Secret{ObjectMeta: meta("demo-token-keys"), Data: keys.Data()},
		&corev1.Secret{ObjectMeta: meta("db"), Data: map[string][]byte{"dsn": []byte(dsn)}},
	).Build()
	h := joinapi.NewHandler(joinapi.Options{Client: reader, APIReader: reader, Log: logr.Discard()})
	hs := httptest.NewServer(h)
	t.Cleanup(func() {
		hs.Close()
		_ = h.Close()
	})
	return hs.URL
}

// TestJoinsRacingForTheLastSeatsNeverOverfillAMap: joins racing for a
// map of 3 seats through the real join API get 3 tickets and room_full
// for the rest, with a retry delay; the room server welcomes all 3.
func TestJoinsRacingForTheLastSeatsNeverOverfillAMap(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dsn, keys := databaseAndKeys(t)
	const seats = 3
	_, endpoint := startRoomServer(ctx, t, keys, dsn, seats)
	api := &client.JoinAPI{BaseURL: startJoinAPI(t, keys, endpoint, dsn, seats)}
	tickets := make([]client.JoinResponse, 10)
	errs := make([]error, len(tickets))
	var wg sync.WaitGroup
	for i := range tickets {
		wg.Go(func() { tickets[i], errs[i] = api.Join(ctx, "games", "demo", client.JoinRequest{}) })
	}
	wg.Wait()
	var granted []client.JoinResponse
	for i, err := range errs {
		var apiErr *client.APIError
		switch {
		case err == nil:
			granted = append(granted, tickets[i])
		case !errors.As(err, &apiErr) || apiErr.Code != "room_full" || apiErr.RetryAfter <= 0:
			t.Errorf("join %d: %v, want a ticket or room_full with a retry delay", i, err)
		}
	}
	if len(granted) != seats {
		t.Fatalf("%d of %d racing joins got a ticket for %d seats", len(granted), len(tickets), seats)
	}
	for _, g := range granted { // every ticket handed out has its seat
		c, err := client.Dial(ctx, g.Endpoint, protocol.Hello{Ticket: g.Ticket}, client.Options{})
		if err != nil {
			t.Fatalf("a granted ticket's hello: %v", err)
		}
		t.Cleanup(func() { _ = c.Close() })
	}
}

// leaseHolder is the map instance holding the character's authority lease.
func leaseHolder(ctx context.Context, t *testing.T, db *store.Postgres, character string) string {
	t.Helper()
	var holder string
	err := db.DB().QueryRowContext(ctx, `SELECT map_instance FROM character_authority WHERE character_id = $1`, character).Scan(&holder)
	if err != nil {
		t.Fatalf("the lease of %s: %v", character, err)
	}
	return holder
}

func TestJoinAPIIsTheDefaultWhenNothingElseIsGiven(t *testing.T) {
	t.Setenv("ROOMKEEPER_JOIN_API", "")
	cases := []struct {
		name     string
		t        ticketFlags
		endpoint string
		want     string
	}{
		{"nothing given: make dev's join API", ticketFlags{room: "demo"}, "", "http://127.0.0.1:8090"},
		{"an endpoint: local tickets", ticketFlags{room: "demo", keyDir: "/k"}, "ws://x/ws", ""},
		{"a ticket", ticketFlags{ticket: "t"}, "ws://x/ws", ""},
	}
	for _, tc := range cases {
		var j joinflags.Flags
		useDefaultJoinAPI(&j, &tc.t, tc.endpoint)
		if j.URL != tc.want {
			t.Errorf("%s: join API %q, want %q", tc.name, j.URL, tc.want)
		}
	}
	t.Setenv("ROOMKEEPER_JOIN_API", "http://elsewhere:8090")
	var j joinflags.Flags
	useDefaultJoinAPI(&j, &ticketFlags{}, "")
	if j.URL != "http://elsewhere:8090" {
		t.Errorf("ROOMKEEPER_JOIN_API ignored: %q", j.URL)
	}
}

// TestCAFileIsTrusted: --ca-file adds its certificates to the roots; a
// file without one is refused at flag parsing, naming it.
func TestCAFileIsTrusted(t *testing.T) {
	dir := t.TempDir()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	defer srv.Close()
	ca := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	var j joinflags.Flags
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	j.Register(fs)
	if err := fs.Parse([]string{"--ca-file", ca}); err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: &http.Transport{TLSClientConfig: j.TLS}}).Get(srv.URL)
	if err != nil {
		t.Fatalf("a server signed by --ca-file: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTeapot {
		t.Errorf("status %d", resp.StatusCode)
	}
	if j.ClientOptions("binary").TLSConfig != j.TLS {
		t.Error("WebSocket dials do not use --ca-file")
	}

	empty := filepath.Join(dir, "empty.crt")
	if err := os.WriteFile(empty, []byte("not a certificate"), 0o644); err != nil {
		t.Fatal(err)
	}
	fs = flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	(&joinflags.Flags{}).Register(fs)
	if err := fs.Parse([]string{"--ca-file", empty}); err == nil || !strings.Contains(err.Error(), empty) {
		t.Errorf("a file without a certificate: %v", err)
	}
}
