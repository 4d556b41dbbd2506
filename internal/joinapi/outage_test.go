package joinapi

import (
	"context"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/roomkeeper/roomkeeper/internal/testenv"
)

// TestPersistenceUnavailable: with the room's database down, keyed joins
// and the characters API answer persistence_unavailable, guests still
// join, and everything works again once the database is back.
func TestPersistenceUnavailable(t *testing.T) {
	t.Parallel()
	own, err := testenv.StartPostgres() // its own server: killing the suite's would break the other tests
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = own.Stop() })
	e := newEnv(t)
	if e.dsn, err = own.NewDatabase("outage"); err != nil {
		t.Fatal(err)
	}
	e.readyRoom("demo", "ws://10.0.0.7:7350/ws", withDatabase())
	const key = "alice-auth-key-0123456789"
	want(t, "before the outage", e.join("demo", JoinRequest{AuthKey: key}), http.StatusOK, "")

	if err := own.Kill(); err != nil {
		t.Fatal(err)
	}
	r := e.join("demo", JoinRequest{AuthKey: key})
	want(t, "keyed join", r, http.StatusServiceUnavailable, CodePersistenceUnavailable)
	if b := r.errorBody(t); b.RetryAfter != persistenceRetrySeconds {
		t.Fatalf("retryAfter %d during an outage, want %d", b.RetryAfter, persistenceRetrySeconds)
	}
	want(t, "list", e.do(http.MethodGet, e.roomPath("demo")+"/characters", key, nil), http.StatusServiceUnavailable, CodePersistenceUnavailable)
	want(t, "create", e.do(http.MethodPost, e.roomPath("demo")+"/characters", key, CreateCharacterRequest{Name: "x"}),
		http.StatusServiceUnavailable, CodePersistenceUnavailable)
	want(t, "guest join", e.join("demo", JoinRequest{}), http.StatusOK, "")

	if err := own.Restart(); err != nil {
		t.Fatal(err)
	}
	want(t, "after the restart", e.join("demo", JoinRequest{AuthKey: key}), http.StatusOK, "")
}

// TestPersistenceUnavailableBeforeFirstOpen: a database that was never
// reachable, or a room whose database Secret is missing, is
// persistence_unavailable too.
func TestPersistenceUnavailableBeforeFirstOpen(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.dsn = "postgres://postgres@127.0.0.1:1/nothing?sslmode=disable" // nothing listens on port 1
	e.readyRoom("demo", "ws://10.0.0.7:7350/ws", withDatabase())
	e.readyRoom("nosecret", "ws://10.0.0.7:7350/ws", withDatabaseSecret("missing"))
	const key = "alice-auth-key-0123456789"
	want(t, "unreachable database", e.join("demo", JoinRequest{AuthKey: key}), http.StatusServiceUnavailable, CodePersistenceUnavailable)
	want(t, "no database Secret", e.join("nosecret", JoinRequest{AuthKey: key}), http.StatusServiceUnavailable, CodePersistenceUnavailable)
	want(t, "guest", e.join("nosecret", JoinRequest{}), http.StatusOK, "")
}

// roomReadingSecretsFrom is an env whose join API reads Secrets through
// live, on a clock the test moves, with a ready room demo that has a
// database.
func roomReadingSecretsFrom(t *testing.T, live client.Reader) (*env, *atomic.Int64) {
	t.Helper()
	now := &atomic.Int64{}
	now.Store(testClock.UnixNano())
	e := newEnv(t, func(o *Options) {
		o.APIReader = live
		o.Clock = func() time.Time { return time.Unix(0, now.Load()).UTC() }
	})
	e.readyRoom("demo", "ws://10.0.0.7:7350/ws", withDatabase())
	return e, now
}

// failingSecrets is an API reader whose reads of Secrets fail while fail
// is set, as a saturated API server's time out.
type failingSecrets struct {
	client.Reader
	fail atomic.Bool
}

func (f *failingSecrets) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, secret := obj.(*corev1.Secret); secret && f.fail.Load() {
		return apierrors.NewTimeoutError("the API server did not answer in time", 1)
	}
	return f.Reader.Get(ctx, key, obj, opts...)
}

// TestADatabaseSecretReadTimingOut: while the API server cannot answer a
// read of the room's database Secret, a keyed join is a
// persistence_unavailable worth retrying (retryAfter and Retry-After), not
// an internal error; once the DSN was read, a read that fails later keeps
// using it, even past its freshness.
func TestADatabaseSecretReadTimingOut(t *testing.T) {
	t.Parallel()
	live := &failingSecrets{Reader: mgr.GetAPIReader()}
	e, now := roomReadingSecretsFrom(t, live)
	const key = "alice-auth-key-0123456789"

	live.fail.Store(true)
	r := e.join("demo", JoinRequest{AuthKey: key})
	want(t, "a join before any read succeeded", r, http.StatusServiceUnavailable, CodePersistenceUnavailable)
	if b := r.errorBody(t); b.RetryAfter != persistenceRetrySeconds || r.header.Get("Retry-After") != strconv.Itoa(persistenceRetrySeconds) {
		t.Fatalf("retryAfter %d, Retry-After %q: want %d for a failure worth retrying", b.RetryAfter, r.header.Get("Retry-After"), persistenceRetrySeconds)
	}

	live.fail.Store(false)
	want(t, "a join once the API server answers", e.join("demo", JoinRequest{AuthKey: key}), http.StatusOK, "")

	live.fail.Store(true)
	now.Add(int64(10 * dsnCacheTTL))
	want(t, "a join whose fresh read fails", e.join("demo", JoinRequest{AuthKey: key}), http.StatusOK, "")
}

// stalledSecrets is an API reader whose reads of Secrets hang until their
// context ends while stall is set, as a starved API server's do; it
// counts the reads of Secrets.
type stalledSecrets struct {
	client.Reader
	stall atomic.Bool
	reads atomic.Int32
}

func (s *stalledSecrets) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, secret := obj.(*corev1.Secret); secret {
		s.reads.Add(1)
		if s.stall.Load() {
			<-ctx.Done()
			return ctx.Err()
		}
	}
	return s.Reader.Get(ctx, key, obj, opts...)
}

// TestAStalledSecretReadHoldsUpNoJoin: once a room's DSN was read, joins
// past its freshness use it while a read refreshes it behind them; the
// API server not answering that read delays none of them (each would
// otherwise wait out its request's deadline on it).
func TestAStalledSecretReadHoldsUpNoJoin(t *testing.T) {
	t.Parallel()
	live := &stalledSecrets{Reader: mgr.GetAPIReader()}
	e, now := roomReadingSecretsFrom(t, live)
	keys := []string{"alice-auth-key-0123456789", "bruno-auth-key-0123456789", "chloe-auth-key-0123456789"}
	want(t, "a first join", e.join("demo", JoinRequest{AuthKey: keys[0]}), http.StatusOK, "")

	live.stall.Store(true)
	now.Add(int64(10 * dsnCacheTTL))
	before := live.reads.Load()
	for _, key := range keys { // each within its request's deadline, though no read answers
		want(t, "a join whose DSN is past its freshness", e.join("demo", JoinRequest{AuthKey: key}), http.StatusOK, "")
	}
	if live.reads.Load() == before {
		t.Fatal("no read refreshed the DSN past its freshness")
	}
}
