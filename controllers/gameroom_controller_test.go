package controllers

import (
	"context"
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/podenv"
	"github.com/roomkeeper/roomkeeper/internal/token"
)

// createRoom stores a room built by the fixture builders in namespace ns.
func createRoom(ctx context.Context, t *testing.T, ns string, room *gamev1.GameRoom) *gamev1.GameRoom {
	t.Helper()
	room.Namespace, room.UID, room.Generation = ns, "", 0
	if err := k8s.Create(ctx, room); err != nil {
		t.Fatalf("creating room: %v", err)
	}
	return room
}

// editRoom applies edit to the live GameRoom ns/name, trying again on a
// conflict, and returns the room as updated.
func editRoom(ctx context.Context, g Gomega, ns, name string, edit roomOption) *gamev1.GameRoom {
	room := &gamev1.GameRoom{}
	g.Eventually(func() error {
		if err := k8s.Get(ctx, key(ns, name), room); err != nil {
			return err
		}
		edit(room)
		return k8s.Update(ctx, room)
	}).Should(Succeed())
	return room
}

// markPodReady plays the kubelet: the pod runs at ip and passes its probe.
func markPodReady(ctx context.Context, g Gomega, ns, name, ip string, ready bool) {
	g.Eventually(func() error {
		pod := &corev1.Pod{}
		if err := k8s.Get(ctx, key(ns, name), pod); err != nil {
			return err
		}
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		pod.Status.Phase = corev1.PodRunning
		pod.Status.PodIP = ip
		pod.Status.PodIPs = []corev1.PodIP{{IP: ip}}
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
		return k8s.Status().Update(ctx, pod)
	}).Should(Succeed())
}

func TestGameRoomCreatesChildren(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	room := createRoom(ctx, t, ns, newGameRoom("demo", withMap("town"), withInstancedMap("crypt"), withDatabase("roomkeeper-db", "dsn")))

	mi := &gamev1.MapInstance{}
	g.Eventually(func() error { return k8s.Get(ctx, key(ns, "demo-town"), mi) }).Should(Succeed())
	g.Expect(metav1.IsControlledBy(mi, room)).To(BeTrue(), "MapInstance controlled by its room")
	g.Expect(mi.Labels).To(HaveKeyWithValue(gamev1.LabelRoom, "demo"))
	g.Expect(mi.Labels).To(HaveKeyWithValue(gamev1.LabelMap, "town"))
	g.Expect(mi.Spec).To(Equal(gamev1.MapInstanceSpec{RoomName: "demo", MapName: "town"}), "a reference to the room's map, not a copy")

	var list gamev1.MapInstanceList
	g.Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	g.Expect(list.Items).To(HaveLen(1), "no MapInstance for the instanced map until a party enters")

	secret := &corev1.Secret{}
	g.Eventually(func() error { return k8s.Get(ctx, key(ns, "demo-token-keys"), secret) }).Should(Succeed())
	g.Expect(metav1.IsControlledBy(secret, room)).To(BeTrue())
	keys, err := token.KeySetFromData(secret.Data)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(keys.Current.ID).NotTo(BeEmpty())

	// The map pods' RBAC is the namespace's, shared by its rooms: no owner.
	for _, obj := range []client.Object{&corev1.ServiceAccount{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}} {
		g.Eventually(func() error { return k8s.Get(ctx, key(ns, RoomServerServiceAccount), obj) }).Should(Succeed())
		g.Expect(obj.GetOwnerReferences()).To(BeEmpty())
		g.Expect(obj.GetLabels()).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "roomkeeper"))
	}

	pod := &corev1.Pod{}
	g.Eventually(func() error { return k8s.Get(ctx, key(ns, "demo-town"), pod) }).Should(Succeed())
	g.Expect(metav1.IsControlledBy(pod, mi)).To(BeTrue(), "pod controlled by its MapInstance")
	g.Expect(pod.Spec.RestartPolicy).To(Equal(corev1.RestartPolicyNever))
	g.Expect(pod.Spec.ServiceAccountName).To(Equal(RoomServerServiceAccount))
	g.Expect(pod.Annotations).To(HaveKey(gamev1.AnnotationInputHash))
	c := pod.Spec.Containers[0]
	g.Expect(c.ReadinessProbe.HTTPGet.Path).To(Equal("/readyz"))
	g.Expect(c.LivenessProbe.HTTPGet.Path).To(Equal("/healthz"))
	g.Expect(c.VolumeMounts).To(ContainElement(HaveField("ReadOnly", true)))
	g.Expect(c.Env).To(ContainElement(HaveField("Name", podenv.EnvDatabaseURL)))
	g.Expect(c.Args).To(ContainElement("--map=town"))

	// Before the pod runs, the room says so; the MapInstance has nothing to
	// report until its first pod changes phase (no status write for it).
	g.Eventually(func() gamev1.GameRoomPhase { _ = k8s.Get(ctx, key(ns, "demo"), room); return room.Status.Phase }).
		Should(Equal(gamev1.GameRoomStarting))
	g.Expect(k8s.Get(ctx, key(ns, "demo-town"), mi)).To(Succeed())
	g.Expect(mi.Status).To(Equal(gamev1.MapInstanceStatus{}))

	markPodReady(ctx, g, ns, "demo-town", "127.0.0.42", true)

	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, key(ns, "demo-town"), mi)).To(Succeed())
		g.Expect(mi.Status.Phase).To(Equal(gamev1.MapReady))
		g.Expect(mi.Status.Endpoint).To(Equal("ws://127.0.0.42:7350/ws"))
		g.Expect(mi.Status.PodName).To(Equal("demo-town"))
		g.Expect(meta.IsStatusConditionTrue(mi.Status.Conditions, gamev1.ConditionReady)).To(BeTrue())
		g.Expect(meta.IsStatusConditionTrue(mi.Status.Conditions, gamev1.ConditionPodHealthy)).To(BeTrue())
		g.Expect(mi.Status.ObservedGeneration).To(Equal(mi.Generation))
	}).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, key(ns, "demo"), room)).To(Succeed())
		g.Expect(room.Status.Phase).To(Equal(gamev1.GameRoomRunning))
		g.Expect(room.Status.ReadyMaps).To(BeEquivalentTo(1))
		g.Expect(room.Status.TotalMaps).To(BeEquivalentTo(1))
		g.Expect(room.Status.KeySecretName).To(Equal("demo-token-keys"))
		g.Expect(room.Status.Maps).To(ConsistOf(gamev1.MapDirectoryEntry{Name: "town", Instance: "demo-town",
			Phase: gamev1.MapReady, Endpoint: "ws://127.0.0.42:7350/ws", Shard: 1}))
		g.Expect(meta.IsStatusConditionTrue(room.Status.Conditions, gamev1.ConditionReady)).To(BeTrue())
		g.Expect(meta.IsStatusConditionFalse(room.Status.Conditions, gamev1.ConditionDegraded)).To(BeTrue())
		g.Expect(room.Status.ObservedGeneration).To(Equal(room.Generation))
	}).Should(Succeed())

	// `kubectl get gr` and `kubectl get mi` print these tables.
	g.Expect(printedTable(ctx, t, ns, "gamerooms")).To(Equal([][]string{
		{"Name", "Ready", "Maps", "Players", "Warm", "Shards", "Phase", "Age"},
		{"demo", "True", "1/1", "0", "null", "null", "Running"},
	}))
	// Endpoint has priority 1: kubectl shows it with -o wide.
	g.Expect(printedTable(ctx, t, ns, "mapinstances")).To(Equal([][]string{
		{"Name", "Room", "Map", "Ready", "Players", "Restarts", "Phase", "Age", "Endpoint"},
		{"demo-town", "demo", "town", "True", "0", "0", "Ready", "ws://127.0.0.42:7350/ws"},
	}))

	// A pod that stops passing its probe makes the room not Ready.
	markPodReady(ctx, g, ns, "demo-town", "127.0.0.42", false)
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, key(ns, "demo"), room)).To(Succeed())
		g.Expect(room.Status.Phase).To(Equal(gamev1.GameRoomStarting))
		g.Expect(room.Status.MapsReady).To(Equal("0/1"))
	}).Should(Succeed())
}

// printedTable asks the API server for the table kubectl prints and returns
// the column names and each row's cells without the age.
func printedTable(ctx context.Context, t *testing.T, ns, resource string) [][]string {
	t.Helper()
	cfg := rest.CopyConfig(restConfig)
	cfg.GroupVersion = &gamev1.GroupVersion
	cfg.APIPath = "/apis"
	cfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	rc, err := rest.RESTClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := rc.Get().Namespace(ns).Resource(resource).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
	if err != nil {
		t.Fatalf("table of %s: %v", resource, err)
	}
	var table metav1.Table
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatal(err)
	}
	var header []string
	for _, c := range table.ColumnDefinitions {
		header = append(header, c.Name)
	}
	out := [][]string{header}
	for _, row := range table.Rows {
		var cells []string
		for i, cell := range row.Cells {
			if table.ColumnDefinitions[i].Name != "Age" {
				cells = append(cells, jsonText(cell))
			}
		}
		out = append(out, cells)
	}
	return out
}

func jsonText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	raw, _ := json.Marshal(v)
	return string(raw)
}

func TestImageChangeReplacesPod(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	createRoom(ctx, t, ns, newGameRoom("demo", withMap("town")))
	old := &corev1.Pod{}
	g.Eventually(func() error { return k8s.Get(ctx, key(ns, "demo-town"), old) }).Should(Succeed())

	editRoom(ctx, g, ns, "demo", func(room *gamev1.GameRoom) {
		room.Spec.Image = "roomkeeper/roomserver:v2"
	})

	g.Eventually(func(g Gomega) {
		pod := &corev1.Pod{}
		g.Expect(k8s.Get(ctx, key(ns, "demo-town"), pod)).To(Succeed())
		g.Expect(pod.UID).NotTo(Equal(old.UID), "a new pod, not the old one updated")
		g.Expect(pod.Spec.Containers[0].Image).To(Equal("roomkeeper/roomserver:v2"))
		g.Expect(pod.Annotations[gamev1.AnnotationInputHash]).NotTo(Equal(old.Annotations[gamev1.AnnotationInputHash]))
	}).Should(Succeed())
	mi := &gamev1.MapInstance{}
	g.Expect(k8s.Get(ctx, key(ns, "demo-town"), mi)).To(Succeed())
	g.Expect(mi.Generation).To(Equal(int64(1)), "the room's change reached the map without a write to it")
}

func TestRemovingMapRemovesMapInstance(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	createRoom(ctx, t, ns, newGameRoom("demo", withMap("town"), withMap("forest")))
	g.Eventually(func() error { return k8s.Get(ctx, key(ns, "demo-forest"), &gamev1.MapInstance{}) }).Should(Succeed())

	room := editRoom(ctx, g, ns, "demo", func(room *gamev1.GameRoom) {
		room.Spec.Maps = room.Spec.Maps[:1]
	})

	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, key(ns, "demo-forest"), &gamev1.MapInstance{}))
	}).Should(BeTrue(), "the removed map's MapInstance is deleted")
	g.Expect(k8s.Get(ctx, key(ns, "demo-town"), &gamev1.MapInstance{})).To(Succeed(), "the other map stays")
	g.Eventually(func() int32 { _ = k8s.Get(ctx, key(ns, "demo"), room); return room.Status.TotalMaps }).Should(BeEquivalentTo(1))
}

// TestStatusWritesSettle checks the controllers write status once per real
// change: a reconcile that finds nothing new writes nothing, and neither
// controller touches a spec.
func TestStatusWritesSettle(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	createRoom(ctx, t, ns, newGameRoom("demo", withMap("town")))
	markPodReady(ctx, g, ns, "demo-town", "127.0.0.7", true)
	room := &gamev1.GameRoom{}
	g.Eventually(func() gamev1.GameRoomPhase { _ = k8s.Get(ctx, key(ns, "demo"), room); return room.Status.Phase }).
		Should(Equal(gamev1.GameRoomRunning))

	roomWatch := watchObject(ctx, t, ns, &gamev1.GameRoomList{}, room)
	mi := &gamev1.MapInstance{}
	g.Expect(k8s.Get(ctx, key(ns, "demo-town"), mi)).To(Succeed())
	miWatch := watchObject(ctx, t, ns, &gamev1.MapInstanceList{}, mi)

	// Wake both controllers without changing anything they report on.
	touch(ctx, g, ns, "demo-token-keys", &corev1.Secret{})
	touch(ctx, g, ns, "demo-town", &corev1.Pod{})
	// Then make one real change each: the room reports the new player count.
	setPlayers(ctx, g, ns, "demo-town", 4)
	g.Eventually(func() int32 { _ = k8s.Get(ctx, key(ns, "demo"), room); return room.Status.Players }).Should(BeEquivalentTo(4))

	fourPlayers := func(obj runtime.Object) bool {
		switch o := obj.(type) {
		case *gamev1.GameRoom:
			return o.Status.Players == 4
		case *gamev1.MapInstance:
			return o.Status.Players == 4
		}
		return false
	}
	g.Expect(eventsUntil(g, roomWatch, fourPlayers)).To(Equal(1), "one room write: the player count")
	g.Expect(eventsUntil(g, miWatch, fourPlayers)).To(Equal(1), "one MapInstance write: the test's own heartbeat")
	g.Expect(room.Generation).To(BeEquivalentTo(1), "nobody wrote the room's spec")
	g.Expect(k8s.Get(ctx, key(ns, "demo-town"), mi)).To(Succeed())
	g.Expect(mi.Generation).To(BeEquivalentTo(1), "the MapInstance spec was written once")
}

// watchObject watches one object from its current resourceVersion.
func watchObject(ctx context.Context, t *testing.T, ns string, list client.ObjectList, obj client.Object) watch.Interface {
	t.Helper()
	w, err := client.NewWithWatch(restConfig, client.Options{Scheme: testScheme})
	if err != nil {
		t.Fatal(err)
	}
	wi, err := w.Watch(ctx, list, client.InNamespace(ns), client.MatchingFields{"metadata.name": obj.GetName()},
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: obj.GetResourceVersion()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(wi.Stop)
	return wi
}

// eventsUntil counts a watch's events up to the first that satisfies done
// (a GET can see a change before the watch delivers it), and those
// buffered after it.
func eventsUntil(g Gomega, w watch.Interface, done func(runtime.Object) bool) int {
	n := 0
	g.Eventually(func() bool {
		select {
		case ev := <-w.ResultChan():
			n++
			return done(ev.Object)
		default:
			return false
		}
	}).Should(BeTrue())
	return n + drain(w)
}

// drain counts the events a watch has delivered so far. It is called after
// the last expected change was observed through the API, and the watch
// delivers in order, so every event up to that change is buffered.
func drain(w watch.Interface) int {
	n := 0
	for {
		select {
		case <-w.ResultChan():
			n++
		default:
			return n
		}
	}
}

func touch(ctx context.Context, g Gomega, ns, name string, obj client.Object) {
	g.Eventually(func() error {
		if err := k8s.Get(ctx, key(ns, name), obj); err != nil {
			return err
		}
		ann := obj.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann["test/touched"] = metav1.Now().String()
		obj.SetAnnotations(ann)
		return k8s.Update(ctx, obj)
	}).Should(Succeed())
}

// setPlayers plays the room server's heartbeat.
func setPlayers(ctx context.Context, g Gomega, ns, name string, players int32) {
	g.Eventually(func() error {
		mi := &gamev1.MapInstance{}
		if err := k8s.Get(ctx, key(ns, name), mi); err != nil {
			return err
		}
		patch := client.MergeFrom(mi.DeepCopy())
		mi.Status.Players = players
		return k8s.Status().Patch(ctx, mi, patch)
	}).Should(Succeed())
}
