package joinapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/shards"
	"github.com/roomkeeper/roomkeeper/internal/testenv"
	"github.com/roomkeeper/roomkeeper/internal/token"
	"github.com/roomkeeper/roomkeeper/internal/wait"
)

// The suite runs against a real kube-apiserver and etcd (the CRDs
// installed, no controllers: tests write the objects and statuses the
// operator would) and a real Postgres. A manager with the production
// cache settings provides the cached client and the API reader the join
// API reads through. Each test gets its own namespace and database.
var (
	scheme     = runtime.NewScheme()
	k8s        client.Client // direct: tests write through it
	restConfig *rest.Config
	mgr        manager.Manager // its cache is what the handler reads
	pg         *testenv.Postgres
	// setupErr is why the suite could not start; every test fails with it.
	setupErr error
)

func TestMain(m *testing.M) {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(gamev1.AddToScheme(scheme))
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	var cp *testenv.ControlPlane
	var stop func()
	pg, cp, stop, setupErr = testenv.StartWithPostgres()
	defer stop()
	if setupErr != nil {
		return m.Run()
	}
	ctx, cancel := context.WithCancel(context.Background())
	done, err := startManager(ctx, cp.Config)
	if err != nil {
		setupErr = err
	}
	code := m.Run()
	cancel()
	if done != nil {
		<-done
	}
	return code
}

// managedSecrets is the manager's cache restriction (controllers.CacheOptions,
// which internal packages may not import): only Secrets and ConfigMaps the
// operator labelled are cached, as in production, so a handler that read
// the database Secret through the cache would fail here too.
func managedSecrets() cache.Options {
	managed := labels.SelectorFromSet(map[string]string{"app.kubernetes.io/managed-by": "roomkeeper"})
	return cache.Options{ByObject: map[client.Object]cache.ByObject{&corev1.Secret{}: {Label: managed}, &corev1.ConfigMap{}: {Label: managed}}}
}

func newManager(cfg *rest.Config) (manager.Manager, error) {
	return ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  managedSecrets(),
	})
}

func startManager(ctx context.Context, cfg *rest.Config) (<-chan struct{}, error) {
	restConfig = cfg
	var err error
	if mgr, err = newManager(cfg); err != nil {
		return nil, err
	}
	if k8s, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
		}
	}()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return done, fmt.Errorf("the manager's cache did not sync")
	}
	return done, nil
}

// testClock is the handler's and the verifier's clock in the suite: fixed,
// so ticket times and quarantine countdowns are exact.
var testClock = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

func clock() time.Time { return testClock }

// env is one test's world: a namespace, a database, a handler logging into
// a buffer, served by an httptest server.
type env struct {
	t   *testing.T
	ctx context.Context
	ns  string
	dsn string
	h   *Handler
	srv *httptest.Server
	log *syncBuffer
}

type envOption func(*Options)

// generous limits are never reached by a test.
var generous = Limits{PerSecond: 10_000, Burst: 10_000}

func withLimits(l Limits) envOption { return func(o *Options) { o.Limits = l } }

// newEnv fails the test when the suite did not start and returns a fresh
// namespace with its own database and handler.
func newEnv(t *testing.T, opts ...envOption) *env {
	t.Helper()
	if setupErr != nil {
		t.Fatalf("the test control plane or Postgres did not start: %v", setupErr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "joinapi-"}}
	if err := k8s.Create(ctx, ns); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	e := &env{t: t, ctx: ctx, ns: ns.Name, dsn: newDatabase(t), log: &syncBuffer{}}
	o := Options{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Writer: mgr.GetClient(), Log: e.log.logger(), Clock: clock,
		Limits: generous} // polling must not trip the rate limit; TestRateLimit sets its own
	for _, opt := range opts {
		opt(&o)
	}
	e.h = NewHandler(o)
	e.srv = httptest.NewServer(e.h)
	t.Cleanup(func() {
		e.srv.Close()
		if err := e.h.Close(); err != nil {
			t.Errorf("closing the handler: %v", err)
		}
	})
	return e
}

var (
	dbSeq      atomic.Int64
	nonDBChars = regexp.MustCompile(`[^a-z0-9_]+`)
)

// newDatabase creates an empty database on the suite's Postgres.
func newDatabase(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("t%d_%s", dbSeq.Add(1), nonDBChars.ReplaceAllString(strings.ToLower(t.Name()), "_"))
	dsn, err := pg.NewDatabase(name[:min(len(name), 60)])
	if err != nil {
		t.Fatal(err)
	}
	return dsn
}

// syncBuffer collects log lines from concurrent requests.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// logger logs everything, every verbosity, into the buffer.
func (b *syncBuffer) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		b.mu.Lock()
		defer b.mu.Unlock()
		fmt.Fprintln(&b.buf, prefix, args)
	}, funcr.Options{Verbosity: 10})
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Fixtures. Objects carry what the CRD requires; tests write statuses the
// way the operator would.

type roomOption func(*gamev1.GameRoom)

// dbSecret is the Secret createRoom puts the env's DSN in.
const dbSecret = "roomkeeper-db"

// withDatabase points the room at the env's database through dbSecret.
func withDatabase() roomOption { return withDatabaseSecret(dbSecret) }

// withDatabaseSecret points the room at the database Secret name.
func withDatabaseSecret(name string) roomOption {
	return func(r *gamev1.GameRoom) {
		r.Spec.Database = &gamev1.DatabaseRef{SecretRef: gamev1.SecretKeyRef{Name: name, Key: "dsn"}}
	}
}

func withInstancedMap(name string) roomOption {
	return func(r *gamev1.GameRoom) {
		r.Spec.Maps = append(r.Spec.Maps, gamev1.GameMap{Name: name, Instanced: true,
			Config: gamev1.MapConfig{Width: 64, Height: 64}})
	}
}

func withMap(name string) roomOption {
	return func(r *gamev1.GameRoom) {
		r.Spec.Maps = append(r.Spec.Maps, gamev1.GameMap{Name: name, Config: gamev1.MapConfig{Width: 64, Height: 64}})
	}
}

// createRoom creates a GameRoom whose default map is "town", its key
// Secret, and (withDatabase) its database Secret. It returns the keys.
func (e *env) createRoom(name string, opts ...roomOption) token.KeySet {
	e.t.Helper()
	room := &gamev1.GameRoom{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec: gamev1.GameRoomSpec{
			Image:        "roomkeeper/roomserver:test",
			DefaultMap:   "town",
			Maps:         []gamev1.GameMap{{Name: "town", Config: gamev1.MapConfig{Width: 64, Height: 64}}},
			RoomSettings: defaultSettings(),
		},
	}
	for _, opt := range opts {
		opt(room)
	}
	e.create(room)
	if db := room.Spec.Database; db != nil && db.SecretRef.Name == dbSecret {
		err := k8s.Create(e.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: dbSecret, Namespace: e.ns},
			Data: map[string][]byte{"dsn": []byte(e.dsn)}})
		if err != nil && !apierrors.IsAlreadyExists(err) { // rooms of a namespace share it
			e.t.Fatal(err)
		}
	}
	return e.createKeys(name)
}

// createKeys creates the room's key Secret, labelled as the operator does.
func (e *env) createKeys(room string) token.KeySet {
	e.t.Helper()
	keys, err := token.Rotate(token.KeySet{})
	if err != nil {
		e.t.Fatal(err)
	}
	e.create(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: room + "-token-keys", Namespace: e.ns, Labels: map[string]string{
			"app.kubernetes.io/managed-by": "roomkeeper", gamev1.LabelRoom: room,
		}},
		Data: keys.Data(),
	})
	return keys
}

// createInstance creates the MapInstance of a room's map, without status:
// as the operator does (labelled, owned by the room) when the room
// exists, else a stray one naming it.
func (e *env) createInstance(room, mapName string) *gamev1.MapInstance {
	e.t.Helper()
	return e.createShard(room, mapName, 1)
}

// createShard creates shard n of a room's shared map, without status.
func (e *env) createShard(room, mapName string, n int32) *gamev1.MapInstance {
	e.t.Helper()
	gr := &gamev1.GameRoom{}
	err := k8s.Get(e.ctx, types.NamespacedName{Namespace: e.ns, Name: room}, gr)
	if client.IgnoreNotFound(err) != nil {
		e.t.Fatal(err)
	}
	m, _ := gr.Spec.Map(mapName)
	m.Name = mapName
	if err != nil { // no such room: one naming it, as another operator might
		gr = &gamev1.GameRoom{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: room}}
	}
	mi := shards.New(gr, m, n)
	if err != nil {
		mi.OwnerReferences = nil
	}
	e.create(mi)
	return mi
}

// setStatus writes the MapInstance's status through the status subresource.
func (e *env) setStatus(mi *gamev1.MapInstance, mutate func(*gamev1.MapInstanceStatus)) {
	e.t.Helper()
	if err := k8s.Get(e.ctx, client.ObjectKeyFromObject(mi), mi); err != nil {
		e.t.Fatal(err)
	}
	mutate(&mi.Status)
	if err := k8s.Status().Update(e.ctx, mi); err != nil {
		e.t.Fatalf("updating the status of %s: %v", mi.Name, err)
	}
}

// ready marks a MapInstance Ready at endpoint.
func ready(endpoint string) func(*gamev1.MapInstanceStatus) {
	return func(s *gamev1.MapInstanceStatus) {
		s.Endpoint = endpoint
		setCondition(s, gamev1.ConditionReady, metav1.ConditionTrue, gamev1.ReasonPodReady)
		setCondition(s, gamev1.ConditionQuarantined, metav1.ConditionFalse, gamev1.ReasonWithinRestartBudget)
	}
}

// quarantined marks a MapInstance quarantined until until.
func quarantined(until time.Time) func(*gamev1.MapInstanceStatus) {
	return func(s *gamev1.MapInstanceStatus) {
		s.Endpoint = ""
		s.QuarantinedUntil = &metav1.Time{Time: until}
		setCondition(s, gamev1.ConditionReady, metav1.ConditionFalse, gamev1.ReasonPodMissing)
		setCondition(s, gamev1.ConditionQuarantined, metav1.ConditionTrue, gamev1.ReasonCrashLoop)
	}
}

func setCondition(s *gamev1.MapInstanceStatus, typ string, status metav1.ConditionStatus, reason string) {
	meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: "set by the test"})
}

// defaultSettings leave every duration to the CRD's defaults.
func defaultSettings() gamev1.RoomSettings {
	return gamev1.RoomSettings{TickRate: 30, SnapshotRate: 10, MaxPlayersPerMap: 100}
}

func (e *env) create(obj client.Object) {
	e.t.Helper()
	if err := k8s.Create(e.ctx, obj); err != nil {
		e.t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

// Requests.

// reply is one HTTP answer.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// errorBody decodes an error answer.
func (r reply) errorBody(t *testing.T) ErrorBody {
	t.Helper()
	var b ErrorBody
	if err := json.Unmarshal(r.body, &b); err != nil {
		t.Fatalf("error body %q: %v", r.body, err)
	}
	return b
}

func (r reply) String() string { return fmt.Sprintf("%d %s", r.status, bytes.TrimSpace(r.body)) }

// do sends a request; body is sent as is when it is a string, else as JSON.
func (e *env) do(method, path, bearer string, body any) reply {
	e.t.Helper()
	r, err := e.try(method, path, bearer, body)
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

// try is do for goroutines other than the test's: it returns what do
// would fail the test with.
func (e *env) try(method, path, bearer string, body any) (reply, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			return reply{}, err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(e.ctx, method, e.srv.URL+path, rd)
	if err != nil {
		return reply{}, err
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return reply{}, err
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: data}, nil
}

func (e *env) roomPath(room string) string {
	return "/v1/namespaces/" + e.ns + "/gamerooms/" + room
}

func (e *env) join(room string, req any) reply {
	e.t.Helper()
	return e.do(http.MethodPost, e.roomPath(room)+"/join", "", req)
}

// pollTimeout bounds how long a test waits for the manager's cache to see
// what it wrote.
const pollTimeout = 30 * time.Second

// eventually repeats call until it answers status with code ("" for a
// success), or fails the test at the deadline with the last answer.
func (e *env) eventually(status int, code Code, call func() reply) reply {
	e.t.Helper()
	return e.poll(call, func(r reply) bool { return r.status == status && (code == "" || errorCode(r) == code) })
}

// poll repeats call until done accepts its answer, or fails the test at
// the deadline with the last answer.
func (e *env) poll(call func() reply, done func(reply) bool) reply {
	e.t.Helper()
	var r reply
	wait.Eventually(e.t, pollTimeout, "the answer expected", func() error {
		if r = call(); !done(r) {
			return fmt.Errorf("the answer is still %s", r)
		}
		return nil
	})
	return r
}

// errorCode is the code of an error answer, or "" if it has none.
func errorCode(r reply) Code {
	var b ErrorBody
	_ = json.Unmarshal(r.body, &b)
	return b.Code
}

// readyRoom makes a room with a Ready town at endpoint and waits until the
// handler sees it.
func (e *env) readyRoom(name, endpoint string, opts ...roomOption) token.KeySet {
	e.t.Helper()
	keys := e.createRoom(name, opts...)
	e.setStatus(e.createInstance(name, "town"), ready(endpoint))
	e.eventually(http.StatusOK, "", func() reply { return e.join(name, JoinRequest{}) })
	return keys
}
