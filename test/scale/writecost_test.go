package scale

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/heartbeat"
)

// BenchmarkWriteCost measures the API server's CPU per request for each
// write a new room costs, one kind at a time, on an otherwise idle control
// plane (no manager, no watches but the API server's own). The objects are
// the operator's: it makes one room, then stops, and its MapInstance, pod,
// Secret and room status are written again b.N times under new names by 8
// writers at once. Run with a fixed count:
//
//	go test -run '^$' -bench WriteCost -benchtime=300x ./test/scale/
func BenchmarkWriteCost(b *testing.B) {
	e := setup(b)
	tpl := e.templateRoom(b)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cost"}}
	if err := e.c.Create(ctx, ns); err != nil {
		b.Fatal(err)
	}
	var next atomic.Int64
	name := func(kind string) string { return fmt.Sprintf("%s-%d", kind, next.Add(1)) }
	creates := []struct {
		name string
		obj  func() client.Object
	}{
		{"gameroom-create", func() client.Object { return room(ns.Name, name("r")) }},
		{"secret-create", func() client.Object { return renamed(tpl.secret, ns.Name, name("s")) }},
		{"mapinstance-create", func() client.Object { return renamed(tpl.mapInstance, ns.Name, name("m")) }},
		{"pod-create", func() client.Object { return renamed(tpl.pod, ns.Name, name("p")) }},
	}
	for _, c := range creates {
		b.Run(c.name, func(b *testing.B) {
			e.measureWrites(b, func(int) error { return e.c.Create(ctx, c.obj()) })
		})
	}
	statusWrites := []struct {
		name  string
		write func(before, after *gamev1.GameRoom) error
	}{
		{"gameroom-status-mergepatch", func(before, after *gamev1.GameRoom) error {
			return e.c.Status().Patch(ctx, after, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
		}},
		{"gameroom-status-update", func(_, after *gamev1.GameRoom) error { return e.c.Status().Update(ctx, after) }},
	}
	for _, w := range statusWrites {
		b.Run(w.name, func(b *testing.B) {
			rooms := make([]*gamev1.GameRoom, b.N)
			for i := range rooms {
				rooms[i] = room(ns.Name, name("st"))
				if err := e.c.Create(ctx, rooms[i]); err != nil {
					b.Fatal(err)
				}
			}
			e.measureWrites(b, func(i int) error {
				after := rooms[i].DeepCopy()
				after.Status = *tpl.room.Status.DeepCopy()
				return w.write(rooms[i], after)
			})
		})
	}
	e.measureLiveness(b, tpl, ns.Name, name)
}

// liveObjects is how many maps the liveness writes go round: more than
// the writers, so no two write one object at once.
const liveObjects = 64

// measureLiveness is what keeps a map alive in the operator's eyes, per
// write: the room server's heartbeat (a server-side apply of its
// MapInstance's status), and a coordination Lease renewed by a merge
// patch of its renewTime (the API server's protobuf and JSON alike).
func (e *env) measureLiveness(b *testing.B, tpl template, ns string, name func(string) string) {
	ctx := context.Background()
	b.Run("mapinstance-heartbeat-apply", func(b *testing.B) {
		reporters := make([]*heartbeat.Reporter, liveObjects)
		for i := range reporters {
			mi := renamed(tpl.mapInstance, ns, name("hb"))
			if err := e.c.Create(ctx, mi); err != nil {
				b.Fatal(err)
			}
			r, err := heartbeat.New(e.cfg, ns, mi.GetName(), time.Now)
			if err != nil {
				b.Fatal(err)
			}
			reporters[i] = r
		}
		e.measureWrites(b, func(i int) error {
			return reporters[i%liveObjects].Apply(ctx, heartbeat.Report{Players: 2, ActivePlayers: 2, Tick: uint64(1000 + i)})
		})
	})
	for _, contentType := range []string{"application/vnd.kubernetes.protobuf", "application/json"} {
		b.Run("lease-renew-patch-"+strings.TrimPrefix(contentType, "application/"), func(b *testing.B) {
			cfg := rest.CopyConfig(e.cfg)
			cfg.ContentType = contentType
			leases := kubernetes.NewForConfigOrDie(cfg).CoordinationV1().Leases(ns)
			names := make([]string, liveObjects)
			for i := range names {
				names[i] = name("lease")
				lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: names[i]},
					Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("demo-town-0"), LeaseDurationSeconds: ptr.To[int32](15)}}
				if _, err := leases.Create(ctx, lease, metav1.CreateOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			e.measureWrites(b, func(i int) error {
				patch := fmt.Appendf(nil, `{"spec":{"renewTime":%q}}`, time.Now().UTC().Format("2006-01-02T15:04:05.000000Z07:00"))
				_, err := leases.Patch(ctx, names[i%liveObjects], types.MergePatchType, patch, metav1.PatchOptions{})
				return err
			})
		})
	}
}

// measureWrites runs write(0..b.N-1) with 8 writers at once and reports
// the API server's and etcd's CPU per write. The machine's speed drifts
// from minute to minute; etcd's work per write is the same for two ways
// of writing the same object, so the API server's CPU over etcd's compares
// them better than either alone.
func (e *env) measureWrites(b *testing.B, write func(i int) error) {
	const writers = 8
	var next atomic.Int64
	errs := make(chan error, writers)
	var profiled <-chan struct{}
	if path := os.Getenv("ROOMKEEPER_SCALE_PROFILE"); path != "" {
		profiled = e.profileAPIServer(b, path+"."+strings.ReplaceAll(b.Name(), "/", "."))
	}
	cpu0 := e.cpu(b)
	start := time.Now()
	for range writers {
		go func() {
			for i := int(next.Add(1)) - 1; i < b.N; i = int(next.Add(1)) - 1 {
				if err := write(i); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range writers {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	cpu1 := e.cpu(b)
	for _, p := range []string{"kube-apiserver", "etcd"} {
		b.ReportMetric((cpu1[p]-cpu0[p]).Seconds()*1000/float64(b.N), "ms-"+p+"-cpu/op")
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "writes/s")
	if profiled != nil {
		<-profiled
	}
}

// template is one room's objects as the operator made them.
type template struct {
	room        *gamev1.GameRoom
	mapInstance *gamev1.MapInstance
	pod         *corev1.Pod
	secret      *corev1.Secret
}

// templateRoom lets the manager make one room, its status written and its
// pods created, then stops the manager and returns the room's objects.
func (e *env) templateRoom(b *testing.B) template {
	b.Helper()
	ctx := context.Background()
	t := template{room: e.readyRoom(b, "template", "tpl"), mapInstance: &gamev1.MapInstance{}, pod: &corev1.Pod{}, secret: &corev1.Secret{}}
	ns := t.room.Namespace
	_ = e.manager.Process.Kill()
	_ = e.manager.Wait()
	instance := client.ObjectKey{Namespace: ns, Name: "tpl-town"}
	for _, get := range []struct {
		key client.ObjectKey
		obj client.Object
	}{{instance, t.mapInstance}, {instance, t.pod}, {client.ObjectKey{Namespace: ns, Name: "tpl-token-keys"}, t.secret}} {
		if err := e.c.Get(ctx, get.key, get.obj); err != nil {
			b.Fatal(err)
		}
	}
	t.mapInstance.Status = gamev1.MapInstanceStatus{}
	t.pod.Status = corev1.PodStatus{}
	return t
}

// renamed is a copy of obj to create under a new name in ns.
func renamed[T client.Object](obj T, ns, name string) T {
	c := obj.DeepCopyObject().(T)
	c.SetNamespace(ns)
	c.SetName(name)
	c.SetResourceVersion("")
	c.SetUID("")
	c.SetCreationTimestamp(metav1.Time{})
	c.SetGeneration(0)
	c.SetManagedFields(nil)
	return c
}
