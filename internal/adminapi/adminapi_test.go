package adminapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/store"
	"github.com/roomkeeper/roomkeeper/internal/testenv"
)

// The admin API runs against a real kube-apiserver and etcd (real
// TokenReviews of real ServiceAccount tokens, real SubjectAccessReviews
// against real RBAC) and a real Postgres.
var (
	k8s       client.Client
	clientset *kubernetes.Clientset
	pg        *testenv.Postgres
	baseURL   string
	setupErr  error
)

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(gamev1.AddToScheme(scheme))
	var cp *testenv.ControlPlane
	var stop func()
	pg, cp, stop, setupErr = testenv.StartWithPostgres()
	defer stop()
	if setupErr != nil {
		return m.Run()
	}
	if setupErr = connect(cp.Config, scheme); setupErr != nil {
		return m.Run()
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		setupErr = err
		return m.Run()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := &Server{Client: k8s, Secrets: k8s, Log: logr.Discard()}
	go func() { _ = srv.Serve(ctx, ln) }()
	baseURL = "http://" + ln.Addr().String()
	return m.Run()
}

func connect(cfg *rest.Config, scheme *runtime.Scheme) error {
	var err error
	if k8s, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	clientset, err = kubernetes.NewForConfig(cfg)
	return err
}

func ctxFor(t *testing.T) context.Context {
	t.Helper()
	if setupErr != nil {
		t.Fatalf("no test environment: %v", setupErr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// env is a namespace with a room on its own database and two
// ServiceAccounts: a moderator granted verbs on gamerooms/admin, and a
// player granted nothing.
type env struct {
	ns                string
	db                *store.Postgres
	moderator, player string // their tokens
}

func newEnv(t *testing.T, verbs ...string) env {
	t.Helper()
	ctx := ctxFor(t)
	ns := strings.ToLower(strings.ReplaceAll(t.Name(), "_", "-"))
	if len(ns) > 40 {
		ns = ns[:40]
	}
	must(t, k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	dsn, err := pg.NewDatabase(strings.ReplaceAll(ns, "-", "_"))
	must(t, err)
	must(t, k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}, StringData: map[string]string{"dsn": dsn}}))
	room := &gamev1.GameRoom{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "demo"}}
	room.Spec.Image, room.Spec.DefaultMap = "roomkeeper/roomserver:dev", "town"
	room.Spec.Maps = []gamev1.GameMap{{Name: "town", Config: gamev1.MapConfig{Seed: 1, Width: 128, Height: 128}}}
	room.Spec.Database = &gamev1.DatabaseRef{SecretRef: gamev1.SecretKeyRef{Name: "db"}}
	must(t, k8s.Create(ctx, room))
	must(t, k8s.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "room-admin"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{gamev1.GroupVersion.Group}, Resources: []string{"gamerooms/" + Subresource}, Verbs: verbs}}}))
	must(t, k8s.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "moderator"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "room-admin"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "moderator"}}}))
	db, err := store.Open(ctx, dsn)
	must(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return env{ns: ns, db: db, moderator: saToken(t, ns, "moderator"), player: saToken(t, ns, "player")}
}

// saToken is a real token of a new ServiceAccount.
func saToken(t *testing.T, ns, name string) string {
	t.Helper()
	ctx := ctxFor(t)
	must(t, k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}))
	tr, err := clientset.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	must(t, err)
	return tr.Status.Token
}

// call makes a request with the token ("" for none) and decodes the answer
// into out when it is 200.
func call(t *testing.T, method, path, token string, out any) (int, protocol.Error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxFor(t), method, baseURL+path, nil)
	must(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	must(t, err)
	if resp.StatusCode != http.StatusOK {
		var e protocol.Error
		_ = json.Unmarshal(body, &e)
		return resp.StatusCode, e
	}
	must(t, json.Unmarshal(body, out))
	return resp.StatusCode, protocol.Error{}
}

// TestOnlyAGrantedUserReadsACharactersHistory: no token, a bad token and a
// user without the grant are refused (401, 401, 403 naming what is
// missing); the moderator reads the character's history in time order
// and its replay, and a room that does not exist is 404.
func TestOnlyAGrantedUserReadsACharactersHistory(t *testing.T) {
	e := newEnv(t, VerbRead)
	ctx := ctxFor(t)
	must(t, e.db.EnsureCharacter(ctx, "ann", "u-ann"))
	lease, err := e.db.ClaimLease(ctx, "ann", "demo-town", "pod", time.Hour, time.Now())
	must(t, err)
	checkpoint := func(rev int64) {
		payload := fmt.Appendf(nil, `{"rev":%d}`, rev)
		_, err := e.db.SaveStates(ctx, "demo-town", []store.CharacterState{{CharacterID: "ann", SchemaVersion: 5, SimCoreVersion: "roomkeeper-sim/2",
			Revision: rev, Payload: payload, Epoch: lease.Epoch}})
		must(t, err)
	}
	checkpoint(1)
	must(t, e.db.CommitCritical(ctx, store.CriticalEvent{EventID: "p1", CharacterID: "ann", MapInstance: "demo-town", Kind: "loot.pickup",
		ItemID: "sword-1", Epoch: lease.Epoch}, store.Move{FromKind: store.OwnerMap, FromID: "demo-town",
		To: store.Item{ItemID: "sword-1", Kind: "sword", OwnerKind: store.OwnerCharacter, OwnerID: "ann"}}))
	checkpoint(2)

	path := "/admin/v1/namespaces/" + e.ns + "/gamerooms/demo/characters/ann/history"
	var history protocol.CharacterHistory
	if code, body := call(t, http.MethodGet, path, "", &history); code != http.StatusUnauthorized || body.Code != "unauthenticated" {
		t.Errorf("no token: %d %+v, want 401 unauthenticated", code, body)
	}
	if code, _ := call(t, http.MethodGet, path, "not-a-token", &history); code != http.StatusUnauthorized {
		t.Errorf("a made-up token: %d, want 401", code)
	}
	code, body := call(t, http.MethodGet, path, e.player, &history)
	if code != http.StatusForbidden || body.Code != "forbidden" || !strings.Contains(body.Message, "gamerooms/admin") {
		t.Errorf("a user without the grant: %d %+v, want 403 naming gamerooms/admin", code, body)
	}

	if code, body := call(t, http.MethodGet, path, e.moderator, &history); code != http.StatusOK {
		t.Fatalf("the moderator: %d %+v", code, body)
	}
	var whats []string
	for _, entry := range history.Entries {
		whats = append(whats, entry.What)
	}
	if strings.Join(whats, ",") != "checkpoint,event,checkpoint" || !strings.Contains(history.Entries[1].Detail, "sword-1") {
		t.Errorf("history %+v, want checkpoint, the pickup of sword-1, checkpoint", history.Entries)
	}
	var replay protocol.ReplayReport
	if code, body := call(t, http.MethodGet, strings.Replace(path, "/history", "/replay", 1), e.moderator, &replay); code != http.StatusOK ||
		replay.Checked != 1 || len(replay.Divergences) != 0 {
		t.Errorf("replay: %d %+v %+v, want one clean pair", code, body, replay)
	}
	if code, _ := call(t, http.MethodGet, strings.Replace(path, "/demo/", "/nope/", 1), e.moderator, &history); code != http.StatusNotFound {
		t.Errorf("a room that does not exist: %d, want 404", code)
	}
	if code, _ := call(t, http.MethodGet, path+"?since=yesterday", e.moderator, &history); code != http.StatusBadRequest {
		t.Errorf("a bad since: %d, want 400", code)
	}
	actions, err := e.db.AdminActions(ctx, time.Now().Add(-time.Hour), 0)
	must(t, err)
	var done []string
	for _, a := range actions {
		done = append(done, a.Actor+" "+a.Action+" "+a.Target)
	}
	moderator := "system:serviceaccount:" + e.ns + ":moderator"
	if want := []string{moderator + " history ann", moderator + " replay ann", moderator + " history ann"}; strings.Join(done, ";") != strings.Join(want, ";") {
		t.Errorf("admin_actions %q, want %q (the refused requests are not among them)", done, want)
	}
}
