package controllers

import (
	"context"
	"fmt"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/heartbeat"
)

// The manager's client counts what the controllers send the API server:
// writes by namespace, verb and kind, and reads of each object (a
// reconcile starts with one), so a test can tell a reconcile ran.
var calls = &callCounter{writes: map[string]map[string]int{}, gets: map[string]int{}}

type callCounter struct {
	mu     sync.Mutex
	writes map[string]map[string]int // namespace -> "verb kind[/subresource]" -> count
	gets   map[string]int            // "kind namespace/name" -> count
}

func (c *callCounter) write(scheme *runtime.Scheme, verb string, obj client.Object, sub string) {
	what := verb + " " + kindName(scheme, obj)
	if sub != "" {
		what += "/" + sub
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.writes[obj.GetNamespace()] == nil {
		c.writes[obj.GetNamespace()] = map[string]int{}
	}
	c.writes[obj.GetNamespace()][what]++
}

func (c *callCounter) get(scheme *runtime.Scheme, key client.ObjectKey, obj client.Object) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gets[kindName(scheme, obj)+" "+key.String()]++
}

// writesIn is a copy of the counts of namespace ns.
func (c *callCounter) writesIn(ns string) map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, v := range c.writes[ns] {
		out[k] = v
	}
	return out
}

func (c *callCounter) getsOf(kind string, key client.ObjectKey) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gets[kind+" "+key.String()]
}

func kindName(scheme *runtime.Scheme, obj client.Object) string {
	if gvk, err := apiutil.GVKForObject(obj, scheme); err == nil {
		return gvk.Kind
	}
	return fmt.Sprintf("%T", obj)
}

// newCountingClient is the manager's NewClient: the usual client, counted.
func newCountingClient(config *rest.Config, options client.Options) (client.Client, error) {
	c, err := client.New(config, options)
	if err != nil {
		return nil, err
	}
	return &countingClient{Client: c}, nil
}

type countingClient struct{ client.Client }

func (c *countingClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	calls.get(c.Scheme(), key, obj)
	return c.Client.Get(ctx, key, obj, opts...)
}

func (c *countingClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	calls.write(c.Scheme(), "create", obj, "")
	return c.Client.Create(ctx, obj, opts...)
}

func (c *countingClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	calls.write(c.Scheme(), "update", obj, "")
	return c.Client.Update(ctx, obj, opts...)
}

func (c *countingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	calls.write(c.Scheme(), "patch", obj, "")
	return c.Client.Patch(ctx, obj, patch, opts...)
}

func (c *countingClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	calls.write(c.Scheme(), "delete", obj, "")
	return c.Client.Delete(ctx, obj, opts...)
}

func (c *countingClient) Status() client.SubResourceWriter { return c.SubResource("status") }

func (c *countingClient) SubResource(sub string) client.SubResourceClient {
	return &countingSubResource{SubResourceClient: c.Client.SubResource(sub), scheme: c.Scheme(), sub: sub}
}

type countingSubResource struct {
	client.SubResourceClient
	scheme *runtime.Scheme
	sub    string
}

func (s *countingSubResource) Create(ctx context.Context, obj, subResource client.Object, opts ...client.SubResourceCreateOption) error {
	calls.write(s.scheme, "create", obj, s.sub)
	return s.SubResourceClient.Create(ctx, obj, subResource, opts...)
}

func (s *countingSubResource) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	calls.write(s.scheme, "update", obj, s.sub)
	return s.SubResourceClient.Update(ctx, obj, opts...)
}

func (s *countingSubResource) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	calls.write(s.scheme, "patch", obj, s.sub)
	return s.SubResourceClient.Patch(ctx, obj, patch, opts...)
}

// reconciled nudges obj (an annotation, which wakes its controller) until
// the controller has read it twice since: the reconciles of one object run
// one at a time, so at least one whole reconcile ran in between.
func reconciled(ctx context.Context, g Gomega, ns, name string, obj client.Object) {
	kind := kindName(testScheme, obj)
	base := calls.getsOf(kind, key(ns, name))
	g.Eventually(func() int {
		touch(ctx, g, ns, name, obj)
		return calls.getsOf(kind, key(ns, name))
	}).Should(BeNumerically(">=", base+2))
}

// sum is the total of counts.
func sum(counts map[string]int) int {
	n := 0
	for _, v := range counts {
		n += v
	}
	return n
}

// minus is counts less base, without the zeros.
func minus(counts, base map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range counts {
		if d := v - base[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// maxWritesPerRoom is docs/design.md's budget: one create per child (key
// Secret, 3 MapInstances, 3 pods) and one status write.
const maxWritesPerRoom = 8

// TestRoomWrites: creating a room of three maps costs at most the budget's
// writes (the namespace's map-pod RBAC is made once, by its first room),
// and reconciling a steady room, its maps pending or running, writes
// nothing.
func TestRoomWrites(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	three := func(name string) *gamev1.GameRoom {
		return newGameRoom(name, withMap("town"), withMap("forest"), withMap("cave"))
	}
	converged := func(name string) {
		for _, m := range []string{"town", "forest", "cave"} {
			g.Eventually(func() error { return k8s.Get(ctx, key(ns, name+"-"+m), &corev1.Pod{}) }).Should(Succeed())
		}
		room := &gamev1.GameRoom{}
		g.Eventually(func() int32 { _ = k8s.Get(ctx, key(ns, name), room); return room.Status.TotalMaps }).Should(BeEquivalentTo(3))
		reconciled(ctx, g, ns, name, &gamev1.GameRoom{})
		for _, m := range []string{"town", "forest", "cave"} {
			reconciled(ctx, g, ns, name+"-"+m, &gamev1.MapInstance{})
		}
		reconciled(ctx, g, ns, name, &gamev1.GameRoom{}) // after the maps' wake-ups
	}

	createRoom(ctx, t, ns, three("first"))
	converged("first")
	first := calls.writesIn(ns)
	g.Expect(first).To(Equal(map[string]int{
		"create ServiceAccount": 1, "create Role": 1, "create RoleBinding": 1, // the namespace's, once
		"create Secret": 1, "create MapInstance": 3, "create Pod": 3, "update GameRoom/status": 1,
	}))

	createRoom(ctx, t, ns, three("second"))
	converged("second")
	second := minus(calls.writesIn(ns), first)
	g.Expect(sum(second)).To(BeNumerically("<=", maxWritesPerRoom), "writes for the second room: %v", second)

	// Steady, pending: reconciling writes nothing.
	steady := calls.writesIn(ns)
	converged("second")
	g.Expect(minus(calls.writesIn(ns), steady)).To(BeEmpty())

	// Running: the maps' and the room's status say so once, then nothing.
	for _, m := range []string{"town", "forest", "cave"} {
		markPodReady(ctx, g, ns, "second-"+m, "127.0.0.9", true)
	}
	room := &gamev1.GameRoom{}
	g.Eventually(func() int32 { _ = k8s.Get(ctx, key(ns, "second"), room); return room.Status.ReadyMaps }).Should(BeEquivalentTo(3))
	converged("second")
	steady = calls.writesIn(ns)
	converged("second")
	g.Expect(minus(calls.writesIn(ns), steady)).To(BeEmpty())

	// A room's change reaches its maps through the watch on rooms: their
	// pods are replaced, and no MapInstance is written but its status.
	room = editRoom(ctx, g, ns, "second", func(room *gamev1.GameRoom) {
		room.Spec.Image = "roomkeeper/roomserver:v2"
	})
	g.Eventually(func() int {
		var pods corev1.PodList
		_ = k8s.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{gamev1.LabelRoom: "second"})
		n := 0
		for _, p := range pods.Items {
			if p.Spec.Containers[0].Image == room.Spec.Image {
				n++
			}
		}
		return n
	}).Should(Equal(3), "a pod of the new image for each map")
	for what := range minus(calls.writesIn(ns), steady) {
		g.Expect(what).NotTo(MatchRegexp(`^(update|patch) MapInstance$`), "the room's change was copied into its maps")
	}
}

// TestASteadyMapCostsNoWritesButItsHeartbeat: maps that play on (players
// steady, their tick and checkpoints moving) write their heartbeat every
// interval and nothing else, and the operator answers those heartbeats
// with no write at all (docs/design.md, "Density").
func TestASteadyMapCostsNoWritesButItsHeartbeat(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	createRoom(ctx, t, ns, newGameRoom("steady", withMap("town"), withMap("forest")))
	maps := []string{"town", "forest"}
	reporters := map[string]*heartbeat.Reporter{}
	for i, m := range maps {
		markPodReady(ctx, g, ns, "steady-"+m, fmt.Sprintf("127.0.0.%d", 20+i), true)
		r, err := heartbeat.New(restConfig, ns, "steady-"+m, testClock.Now)
		g.Expect(err).NotTo(HaveOccurred())
		reporters[m] = r
	}
	beat := func(round int) {
		for _, m := range maps {
			g.Expect(reporters[m].Apply(ctx, heartbeat.Report{Players: 2, ActivePlayers: 2, Tick: uint64(150 * round),
				CheckpointRevision: int64(round), CheckpointTime: testClock.Now(),
				World: &heartbeat.World{Revision: int64(round), Tick: int64(150 * round), Time: testClock.Now()}})).To(Succeed())
		}
	}
	beat(1)
	room := &gamev1.GameRoom{}
	g.Eventually(func() int32 { _ = k8s.Get(ctx, key(ns, "steady"), room); return room.Status.Players }).Should(BeEquivalentTo(4))
	for _, m := range maps {
		reconciled(ctx, g, ns, "steady-"+m, &gamev1.MapInstance{})
	}
	reconciled(ctx, g, ns, "steady", &gamev1.GameRoom{})

	steady := calls.writesIn(ns)
	for round := 2; round <= 6; round++ {
		testClock.Advance(heartbeat.DefaultInterval)
		beat(round)
		for _, m := range maps {
			reconciled(ctx, g, ns, "steady-"+m, &gamev1.MapInstance{})
		}
		reconciled(ctx, g, ns, "steady", &gamev1.GameRoom{})
	}
	g.Expect(minus(calls.writesIn(ns), steady)).To(BeEmpty(), "the operator wrote in answer to steady heartbeats")
}
