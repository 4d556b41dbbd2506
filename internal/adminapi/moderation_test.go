package adminapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/gorilla/websocket"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/roomserver"
	"github.com/roomkeeper/roomkeeper/internal/store"
	"github.com/roomkeeper/roomkeeper/internal/token"
	pkgclient "github.com/roomkeeper/roomkeeper/pkg/client"
)

// moderated is a room whose map demo-town runs in process as its pod
// would (its key Secret, its MapInstance with a pod at 127.0.0.1), and an
// admin API that pushes to it.
type moderated struct {
	env
	keys  token.KeySet
	game  string // the map's WebSocket URL
	admin string // the admin API's base URL
}

func newModerated(t *testing.T) moderated {
	t.Helper()
	ctx := ctxFor(t)
	e := newEnv(t, VerbRead, VerbAct)
	keys, err := token.Rotate(token.KeySet{})
	must(t, err)
	must(t, k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: gamev1.KeySecretName("demo")}, Data: keys.Data()}))

	cfg := roomserver.DefaultConfig()
	cfg.Room, cfg.Map, cfg.Instance = "demo", "town", "demo-town"
	cfg.MapConfig = json.RawMessage(`{"seed":1,"width":256,"height":256}`)
	srv, err := roomserver.New(cfg, roomserver.Deps{Keys: token.StaticKeys(keys), Replay: store.NewReplayGuard(e.db), Store: e.db,
		Log: slog.New(slog.DiscardHandler)})
	must(t, err)
	runCtx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	go srv.Run(runCtx)
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(hs.URL, "http://"))

	room := &gamev1.GameRoom{}
	must(t, k8s.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: "demo"}, room))
	mi := gamev1.NewMapInstance(room, room.Spec.Maps[0], "demo-town")
	must(t, k8s.Create(ctx, mi))
	mi.Status.PodName = "demo-town-pod"
	must(t, k8s.Status().Update(ctx, mi))
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "demo-town-pod"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "roomserver", Image: "roomkeeper/roomserver:dev"}}}}
	must(t, k8s.Create(ctx, pod))
	pod.Status.PodIP = "127.0.0.1"
	must(t, k8s.Status().Update(ctx, pod))

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	p, _ := strconv.Atoi(port)
	api := &Server{Client: k8s, Secrets: k8s, Log: logr.Discard(), PodHTTPPort: p}
	go func() { _ = api.Serve(runCtx, ln) }()
	return moderated{env: e, keys: keys, game: "ws" + strings.TrimPrefix(hs.URL, "http") + "/ws", admin: "http://" + ln.Addr().String()}
}

// join connects user's character to demo-town with a join ticket, or
// returns the refusal.
func (m moderated) join(t *testing.T, user, character string) (*pkgclient.Client, error) {
	t.Helper()
	ticket, _, err := token.NewSigner(token.StaticKeys(m.keys), time.Now).Sign(token.Claims{Type: token.TypeJoin,
		Subject: user, Character: character, Room: "demo", Map: "demo-town"}, 10*time.Second)
	must(t, err)
	var c *pkgclient.Client
	deadline := time.Now().Add(30 * time.Second)
	for { // the map turns ready once its world is restored
		c, err = pkgclient.Dial(ctxFor(t), m.game, protocol.Hello{Ticket: ticket}, pkgclient.Options{})
		if err == nil || !strings.Contains(err.Error(), "persistence_unavailable") || time.Now().After(deadline) {
			break
		}
		ticket, _, _ = token.NewSigner(token.StaticKeys(m.keys), time.Now).Sign(token.Claims{Type: token.TypeJoin,
			Subject: user, Character: character, Room: "demo", Map: "demo-town"}, 10*time.Second)
	}
	if c != nil {
		t.Cleanup(func() { _ = c.Close() })
	}
	return c, err
}

// post calls a moderation route and decodes the answer.
func (m moderated) post(t *testing.T, method, route, tok string, body any) (int, ModerationAnswer, protocol.Error) {
	t.Helper()
	raw, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctxFor(t), method, m.admin+"/admin/v1/namespaces/"+m.ns+"/gamerooms/demo/"+route, bytes.NewReader(raw))
	must(t, err)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	var answer ModerationAnswer
	var e protocol.Error
	if resp.StatusCode == http.StatusOK {
		must(t, json.NewDecoder(resp.Body).Decode(&answer))
	} else {
		_ = json.NewDecoder(resp.Body).Decode(&e)
	}
	return resp.StatusCode, answer, e
}

// closeCode waits for c's connection to end and returns its close frame.
func closeCode(t *testing.T, c *pkgclient.Client) *websocket.CloseError {
	t.Helper()
	s, _ := c.WaitFor(ctxFor(t), func(s pkgclient.State) bool { return s.Closed != nil })
	var ce *websocket.CloseError
	if !errors.As(s.Closed, &ce) {
		t.Fatalf("closed with %v, want a close frame", s.Closed)
	}
	return ce
}

// TestModerationActsOnTheRoomsMaps: a reader may not act (403); the
// moderator kicks a player (4001 kicked), bans a user (its session ends,
// its joins are refused banned until the ban is lifted), messages the
// map and saves it; every action is in admin_actions with who did it and
// what was asked.
func TestModerationActsOnTheRoomsMaps(t *testing.T) {
	m := newModerated(t)
	ctx := ctxFor(t)
	kim, err := m.join(t, "user-kim", "kim")
	must(t, err)

	if code, _, e := m.post(t, http.MethodPost, "kick", m.player, map[string]string{"character": "kim"}); code != http.StatusForbidden || !strings.Contains(e.Message, "update") {
		t.Errorf("a user without the grant kicks: %d %+v, want 403 naming update", code, e)
	}
	if code, _, _ := m.post(t, http.MethodPost, "kick", m.moderator, map[string]string{}); code != http.StatusBadRequest {
		t.Errorf("a kick of nobody: %d, want 400", code)
	}
	code, answer, e := m.post(t, http.MethodPost, "kick", m.moderator, map[string]string{"character": "kim", "reason": "afk farming"})
	if code != http.StatusOK || answer.Affected != 1 || !slices.Equal(answer.Maps, []string{"demo-town"}) {
		t.Fatalf("kick: %d %+v %+v", code, answer, e)
	}
	if ce := closeCode(t, kim); ce.Code != protocol.CloseKicked || ce.Text != string(protocol.CodeKicked) {
		t.Errorf("kim's close: %d %q, want 4001 kicked", ce.Code, ce.Text)
	}

	kim, err = m.join(t, "user-kim", "kim")
	must(t, err)
	code, answer, e = m.post(t, http.MethodPost, "bans", m.moderator, map[string]string{"user": "user-kim", "duration": "1h", "reason": "cheating"})
	if code != http.StatusOK || answer.Affected != 1 || answer.Until == nil || time.Until(*answer.Until) < 59*time.Minute {
		t.Fatalf("ban: %d %+v %+v", code, answer, e)
	}
	if ce := closeCode(t, kim); ce.Code != protocol.CloseKicked || ce.Text != string(protocol.CodeBanned) {
		t.Errorf("kim's close on the ban: %d %q, want 4001 banned", ce.Code, ce.Text)
	}
	if _, err := m.join(t, "user-kim", "kim"); err == nil || !strings.Contains(err.Error(), string(protocol.CodeBanned)) {
		t.Errorf("a banned user's join: %v, want banned", err)
	}
	if code, _, _ := m.post(t, http.MethodDelete, "bans/user-kim", m.moderator, nil); code != http.StatusOK {
		t.Errorf("lifting the ban: %d", code)
	}
	if code, _, _ := m.post(t, http.MethodDelete, "bans/user-kim", m.moderator, nil); code != http.StatusNotFound {
		t.Errorf("lifting it again: %d, want 404", code)
	}
	kim, err = m.join(t, "user-kim", "kim")
	must(t, err)

	if code, answer, _ := m.post(t, http.MethodPost, "message", m.moderator, map[string]string{"text": "restart at 18:00"}); code != http.StatusOK || answer.Affected != 1 {
		t.Errorf("message: %d %+v", code, answer)
	}
	if _, err := kim.WaitFor(ctx, func(s pkgclient.State) bool {
		return slices.ContainsFunc(s.Events, func(e protocol.Event) bool { return e.Type == protocol.EventSystemMessage })
	}); err != nil {
		t.Errorf("the message never came: %v", err)
	}
	if code, answer, e := m.post(t, http.MethodPost, "save", m.moderator, map[string]string{"map": "demo-town"}); code != http.StatusOK || answer.Affected != 1 {
		t.Errorf("save: %d %+v %+v", code, answer, e)
	}
	if code, _, _ := m.post(t, http.MethodPost, "save", m.moderator, map[string]string{"map": "nowhere"}); code != http.StatusNotFound {
		t.Errorf("saving a map that does not exist: %d, want 404", code)
	}

	actions, err := m.db.AdminActions(ctx, time.Now().Add(-time.Hour), 0)
	must(t, err)
	moderator := "system:serviceaccount:" + m.ns + ":moderator"
	var ban *store.AdminAction
	for i, a := range actions {
		if a.Actor != moderator {
			t.Errorf("an action of %q recorded: only the moderator's are allowed", a.Actor)
		}
		if a.Action == "ban" {
			ban = &actions[i]
		}
	}
	if ban == nil || ban.Detail["request"].(map[string]any)["reason"] != "cheating" {
		t.Errorf("the ban's record: %+v", ban)
	}
}
