package controllers

import (
	"context"
	"strconv"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/heartbeat"
)

func withExposure(e gamev1.Exposure) roomOption {
	return func(r *gamev1.GameRoom) { r.Spec.Exposure = e }
}

// exposedCondition is the MapInstance's Exposed condition, or an empty one.
func exposedCondition(mi *gamev1.MapInstance) metav1.Condition {
	if c := meta.FindStatusCondition(mi.Status.Conditions, gamev1.ConditionExposed); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// TestDirectExposureIsThePodAddress: the default, as before.
func TestDirectExposureIsThePodAddress(t *testing.T) {
	ctx, ns, g := runningMap(t, "10.1.2.3")
	g.Eventually(func(g Gomega) {
		mi := mapInstance(ctx, g, ns)
		g.Expect(mi.Status.PodReplacement).To(Equal(gamev1.ReplaceByHandover), "Direct, the CRD's default, hands over")
		g.Expect(mi.Status.Endpoint).To(Equal("ws://10.1.2.3:7350/ws"))
		g.Expect(exposedCondition(mi).Reason).To(Equal(gamev1.ReasonDirect))
	}).Should(Succeed())
}

// TestHostPortExposure: a map gets a port of the range, its pod asks for
// it on the node, and the endpoint is the node's external address and
// that port; when its namespace holds its share of the range, or every
// port is taken, the next map waits, with no pod, a condition saying why
// and roomkeeper_unexposed_maps counting it, until a port is freed; one
// namespace's share never keeps another from a free port.
func TestHostPortExposure(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-" + ns}}
	g.Expect(k8s.Create(ctx, node)).To(Succeed())
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.9"}, {Type: corev1.NodeExternalIP, Address: "203.0.113.7"}}
	g.Expect(k8s.Status().Update(ctx, node)).To(Succeed())
	hostPort := gamev1.Exposure{Type: gamev1.ExposureHostPort}
	createRoom(ctx, t, ns, newGameRoom("demo", withMap("town"), withExposure(hostPort)))

	var port int32
	g.Eventually(func(g Gomega) {
		pod := &corev1.Pod{}
		g.Expect(k8s.Get(ctx, key(ns, "demo-town"), pod)).To(Succeed())
		port = mapInstance(ctx, g, ns).Status.HostPort
		g.Expect(port).To(BeNumerically(">=", testHostPorts.Min))
		g.Expect(port).To(BeNumerically("<=", testHostPorts.Max))
		g.Expect(pod.Spec.Containers[0].Ports[0].HostPort).To(Equal(port), "the pod asks for the port its status holds")
	}).Should(Succeed())
	bindPod(ctx, g, ns, "demo-town", node.Name)
	startPod(ctx, g, ns, "10.1.2.3")
	g.Eventually(func(g Gomega) {
		mi := mapInstance(ctx, g, ns)
		g.Expect(mi.Status.Endpoint).To(Equal("ws://203.0.113.7:" + itoa(port) + "/ws"))
		g.Expect(exposedCondition(mi).Reason).To(Equal(gamev1.ReasonHostPortAssigned))
	}).Should(Succeed())

	// The range has three ports, a namespace may hold two: the namespace's
	// second room takes one, its third waits for its share although a
	// port is free; another namespace's room takes that port, and its next
	// room waits for the range.
	_, other := envtestNamespace(t)
	t.Cleanup(func() { // give the suite's few host ports back (envtest collects no garbage)
		for _, n := range []string{ns, other} {
			_ = k8s.DeleteAllOf(context.Background(), &gamev1.GameRoom{}, client.InNamespace(n))
			_ = k8s.DeleteAllOf(context.Background(), &gamev1.MapInstance{}, client.InNamespace(n))
		}
	})
	createRoom(ctx, t, ns, newGameRoom("second", withMap("town"), withExposure(hostPort)))
	g.Eventually(func(g Gomega) { g.Expect(heldPort(ctx, g, ns, "second")).NotTo(BeZero()) }).Should(Succeed())
	createRoom(ctx, t, ns, newGameRoom("third", withMap("town"), withExposure(hostPort)))
	createRoom(ctx, t, other, newGameRoom("fourth", withMap("town"), withExposure(hostPort)))
	g.Eventually(func(g Gomega) {
		g.Expect(heldPort(ctx, g, other, "fourth")).NotTo(BeZero(), "another namespace gets the port the first may not take")
		expectWaiting(ctx, g, ns, "third", gamev1.ReasonHostPortShareUsed, "--host-ports-per-namespace 2")
		g.Expect(unexposedMaps(t, ns, gamev1.ReasonHostPortShareUsed)).To(Equal(1.0))
	}).Should(Succeed())
	createRoom(ctx, t, other, newGameRoom("fifth", withMap("town"), withExposure(hostPort)))
	g.Eventually(func(g Gomega) {
		expectWaiting(ctx, g, other, "fifth", gamev1.ReasonHostPortsExhausted, testHostPorts.String())
		g.Expect(unexposedMaps(t, other, gamev1.ReasonHostPortsExhausted)).To(Equal(1.0))
	}).Should(Succeed())
	held := map[int32]bool{}
	for _, m := range []struct{ ns, room string }{{ns, "demo"}, {ns, "second"}, {other, "fourth"}} {
		held[heldPort(ctx, g, m.ns, m.room)] = true
	}
	g.Expect(held).To(HaveLen(3), "three maps, three different ports")

	// Freeing the other namespace's port (the room and its MapInstance
	// deleted: envtest runs no garbage collector) lets its waiting map
	// start; the first namespace's third room still waits for its share.
	g.Expect(k8s.Delete(ctx, newGameRoomIn(other, "fourth"))).To(Succeed())
	g.Expect(k8s.Delete(ctx, &gamev1.MapInstance{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "fourth-town"}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(heldPort(ctx, g, other, "fifth")).NotTo(BeZero())
		expectWaiting(ctx, g, ns, "third", gamev1.ReasonHostPortShareUsed, "--host-ports-per-namespace 2")
	}).Should(Succeed())
}

// TestAHostPortMapHandsOverOnAPortOfItsOwn: a rollout of a HostPort map
// starts the new pod on a second port of the range, recorded in
// status.handover.hostPort before the pod exists; the old pod hands its
// players over to the node's address at that port; the new port becomes
// the map's and its endpoint's, and the old one is free once the old pod
// is gone. The new pod is not replaced again for its port.
func TestAHostPortMapHandsOverOnAPortOfItsOwn(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	t.Cleanup(func() { // give the suite's few host ports back (envtest collects no garbage)
		_ = k8s.DeleteAllOf(context.Background(), &gamev1.GameRoom{}, client.InNamespace(ns))
		_ = k8s.DeleteAllOf(context.Background(), &gamev1.MapInstance{}, client.InNamespace(ns))
	})
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-" + ns}}
	g.Expect(k8s.Create(ctx, node)).To(Succeed())
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeExternalIP, Address: "203.0.113.8"}}
	g.Expect(k8s.Status().Update(ctx, node)).To(Succeed())
	createRoom(ctx, t, ns, newGameRoom("demo", withMap("town"), withExposure(gamev1.Exposure{Type: gamev1.ExposureHostPort})))
	currentPodUID(ctx, g, ns, "")
	bindPod(ctx, g, ns, "demo-town", node.Name)
	startPod(ctx, g, ns, "10.1.2.3")
	mi := mapInstance(ctx, g, ns)
	oldPort := mi.Status.HostPort
	g.Expect(mi.Status.PodReplacement).To(Equal(gamev1.ReplaceByHandover), "HostPort maps hand over by default")

	changeImage(ctx, g, ns, "roomkeeper/roomserver:v2")
	next := successorPod(ctx, g, ns)
	newPort := next.Spec.Containers[0].Ports[0].HostPort
	g.Expect(newPort).NotTo(Equal(oldPort))
	g.Expect(testHostPorts.contains(newPort)).To(BeTrue())
	g.Expect(mapInstance(ctx, g, ns).Status.Handover.HostPort).To(Equal(newPort), "the status records the new pod's port")
	bindPod(ctx, g, ns, next.Name, node.Name)
	holdPod(ctx, g, ns, "demo-town", true)
	setPodStatus(ctx, g, ns, next.Name, runningReady("10.1.2.4"))
	endpoint := "ws://203.0.113.8:" + itoa(newPort) + "/ws"
	g.Eventually(func() string { return handoverEndpoint(ctx, g, ns) }).Should(Equal(endpoint), "the old pod hands over to the new pod's port")
	g.Expect(mapInstance(ctx, g, ns).Status.HostPort).To(Equal(newPort))
	g.Expect(mapInstance(ctx, g, ns).Status.Handover.HostPort).To(Equal(oldPort), "the old pod keeps its port until it is gone")

	holdPod(ctx, g, ns, "demo-town", false)
	// A bound pod waits for its kubelet to confirm it stopped; there is
	// none here, so the test confirms it.
	g.Expect(client.IgnoreNotFound(k8s.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "demo-town"}},
		client.GracePeriodSeconds(0)))).To(Succeed())
	g.Eventually(func(g Gomega) {
		mi := mapInstance(ctx, g, ns)
		g.Expect(mi.Status.Handover).To(BeNil())
		g.Expect(mi.Status.PodName).To(Equal(next.Name))
		g.Expect(mi.Status.HostPort).To(Equal(newPort))
		g.Expect(mi.Status.Endpoint).To(Equal(endpoint))
	}).Should(Succeed())
	g.Consistently(func() string { return mapInstance(ctx, g, ns).Status.PodName }).Should(Equal(next.Name), "no second handover for the port")

	// The old port is free again: two more maps of the namespace (its
	// share is two) fit the three ports beside the new one.
	createRoom(ctx, t, ns, newGameRoom("second", withMap("town"), withExposure(gamev1.Exposure{Type: gamev1.ExposureHostPort})))
	g.Eventually(func(g Gomega) { g.Expect(heldPort(ctx, g, ns, "second")).To(Equal(oldPort)) }).Should(Succeed())
}

// bindPod puts pod on node, as the scheduler would.
func bindPod(ctx context.Context, g Gomega, ns, pod, node string) {
	p := &corev1.Pod{}
	g.Expect(k8s.Get(ctx, key(ns, pod), p)).To(Succeed())
	g.Expect(k8s.SubResource("binding").Create(ctx, p, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod}, Target: corev1.ObjectReference{Kind: "Node", Name: node}})).To(Succeed())
}

// heldPort is the host port room's town holds (0: none).
func heldPort(ctx context.Context, g Gomega, ns, room string) int32 {
	mi := &gamev1.MapInstance{}
	g.Expect(k8s.Get(ctx, key(ns, room+"-town"), mi)).To(Succeed())
	return mi.Status.HostPort
}

// expectWaiting: room's town has no port and no pod, and says why.
func expectWaiting(ctx context.Context, g Gomega, ns, room, reason, message string) {
	mi := &gamev1.MapInstance{}
	g.Expect(k8s.Get(ctx, key(ns, room+"-town"), mi)).To(Succeed())
	c := exposedCondition(mi)
	g.Expect(c.Reason).To(Equal(reason))
	g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(c.Message).To(ContainSubstring(message))
	g.Expect(mi.Status.HostPort).To(BeZero())
	g.Expect(apierrors.IsNotFound(k8s.Get(ctx, key(ns, room+"-town"), &corev1.Pod{}))).To(BeTrue(), "no pod without a port")
}

// unexposedMaps is roomkeeper_unexposed_maps for namespace and reason.
func unexposedMaps(t *testing.T, namespace, reason string) float64 {
	v, _ := inventorySample(t, "roomkeeper_unexposed_maps", map[string]string{"namespace": namespace, "reason": reason})
	return v
}

func newGameRoomIn(ns, name string) *gamev1.GameRoom {
	return &gamev1.GameRoom{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

// TestGatewayExposure: a map behind a Gateway gets a Service and an
// HTTPRoute; its endpoint is the public wss:// URL once the Gateway exists
// and accepts the route; a missing Gateway or a refused route say so and
// give no endpoint; going back to Direct removes both objects.
func TestGatewayExposure(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	gw := gamev1.Exposure{Type: gamev1.ExposureGateway, Gateway: &gamev1.GatewayExposure{
		Name: "public", Hostname: "games.example.com", Port: 8443}}
	createRoom(ctx, t, ns, newGameRoom("demo", withMap("town"), withExposure(gw)))
	currentPodUID(ctx, g, ns, "")
	startPod(ctx, g, ns, "10.1.2.3")

	route := &gatewayv1.HTTPRoute{}
	g.Eventually(func(g Gomega) {
		mi := mapInstance(ctx, g, ns)
		g.Expect(exposedCondition(mi).Reason).To(Equal(gamev1.ReasonGatewayNotFound))
		g.Expect(exposedCondition(mi).Message).To(ContainSubstring(ns + "/public"))
		g.Expect(mi.Status.Endpoint).To(BeEmpty(), "no endpoint players cannot use")
		g.Expect(k8s.Get(ctx, key(ns, "demo-town"), route)).To(Succeed())
		svc := &corev1.Service{}
		g.Expect(k8s.Get(ctx, key(ns, "demo-town"), svc)).To(Succeed())
		g.Expect(svc.Spec.Ports[0].Port).To(BeEquivalentTo(7350))
		g.Expect(svc.Spec.Selector).To(HaveKeyWithValue(labelPod, mi.Status.PodName), "the pod serving the map, when there is one")
		g.Expect(svc.Spec.PublishNotReadyAddresses).To(BeTrue())
	}).Should(Succeed())
	rule := route.Spec.Rules[0]
	g.Expect(route.Spec.Hostnames).To(ConsistOf(gatewayv1.Hostname("games.example.com")))
	g.Expect(*rule.Matches[0].Path.Value).To(Equal("/" + ns + "/demo/town/ws"))
	g.Expect(*rule.Filters[0].URLRewrite.Path.ReplacePrefixMatch).To(Equal("/ws"))
	g.Expect(string(rule.BackendRefs[0].Name)).To(Equal("demo-town"))
	g.Expect(string(route.Spec.ParentRefs[0].Name)).To(Equal("public"))

	g.Expect(k8s.Create(ctx, &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "public"},
		Spec: gatewayv1.GatewaySpec{GatewayClassName: "any", Listeners: []gatewayv1.Listener{{
			Name: "https", Port: 443, Protocol: gatewayv1.HTTPSProtocolType}}}})).To(Succeed())
	g.Eventually(func() string { return exposedCondition(mapInstance(ctx, g, ns)).Reason }).Should(Equal(gamev1.ReasonRoutePending))

	setRouteAccepted(ctx, g, ns, metav1.ConditionTrue, "Accepted")
	g.Eventually(func(g Gomega) {
		mi := mapInstance(ctx, g, ns)
		g.Expect(exposedCondition(mi).Reason).To(Equal(gamev1.ReasonRouteAttached))
		g.Expect(mi.Status.Endpoint).To(Equal("wss://games.example.com:8443/" + ns + "/demo/town/ws"))
	}).Should(Succeed())
	g.Eventually(func(g Gomega) {
		r := &gamev1.GameRoom{}
		g.Expect(k8s.Get(ctx, key(ns, "demo"), r)).To(Succeed())
		g.Expect(r.Status.Maps).To(HaveLen(1))
		g.Expect(r.Status.Maps[0].Endpoint).To(Equal("wss://games.example.com:8443/"+ns+"/demo/town/ws"), "the room's directory shows it")
	}).Should(Succeed())

	settled := &gatewayv1.HTTPRoute{}
	g.Expect(k8s.Get(ctx, key(ns, "demo-town"), settled)).To(Succeed())
	g.Consistently(func() string {
		r := &gatewayv1.HTTPRoute{}
		_ = k8s.Get(ctx, key(ns, "demo-town"), r)
		return r.ResourceVersion
	}).Should(Equal(settled.ResourceVersion), "a settled map rewrites nothing")

	// A new hostname replaces the route's; its acceptance stays.
	editRoom(ctx, g, ns, "demo", func(room *gamev1.GameRoom) {
		room.Spec.Exposure.Gateway.Hostname = "play.example.com"
	})
	g.Eventually(func(g Gomega) {
		r := &gatewayv1.HTTPRoute{}
		g.Expect(k8s.Get(ctx, key(ns, "demo-town"), r)).To(Succeed())
		g.Expect(r.Spec.Hostnames).To(ConsistOf(gatewayv1.Hostname("play.example.com")))
		g.Expect(mapInstance(ctx, g, ns).Status.Endpoint).To(Equal("wss://play.example.com:8443/" + ns + "/demo/town/ws"))
	}).Should(Succeed())

	setRouteAccepted(ctx, g, ns, metav1.ConditionFalse, "NotAllowedByListeners")
	g.Eventually(func(g Gomega) {
		mi := mapInstance(ctx, g, ns)
		g.Expect(exposedCondition(mi).Reason).To(Equal(gamev1.ReasonRouteNotAccepted))
		g.Expect(exposedCondition(mi).Message).To(ContainSubstring("NotAllowedByListeners"))
		g.Expect(mi.Status.Endpoint).To(BeEmpty())
	}).Should(Succeed())

	editRoom(ctx, g, ns, "demo", func(room *gamev1.GameRoom) {
		room.Spec.Exposure = gamev1.Exposure{Type: gamev1.ExposureDirect}
	})
	g.Eventually(func(g Gomega) {
		g.Expect(apierrors.IsNotFound(k8s.Get(ctx, key(ns, "demo-town"), &gatewayv1.HTTPRoute{}))).To(BeTrue())
		g.Expect(apierrors.IsNotFound(k8s.Get(ctx, key(ns, "demo-town"), &corev1.Service{}))).To(BeTrue())
		g.Expect(mapInstance(ctx, g, ns).Status.Endpoint).To(Equal("ws://10.1.2.3:7350/ws"))
	}).Should(Succeed())
}

// setRouteAccepted plays the Gateway's implementation for the map's route.
func setRouteAccepted(ctx context.Context, g Gomega, ns string, status metav1.ConditionStatus, reason string) {
	setNamedRouteAccepted(ctx, g, ns, "demo-town", status, reason)
}

// setNamedRouteAccepted plays the Gateway's implementation for route name.
func setNamedRouteAccepted(ctx context.Context, g Gomega, ns, name string, status metav1.ConditionStatus, reason string) {
	g.Eventually(func() error {
		route := &gatewayv1.HTTPRoute{}
		if err := k8s.Get(ctx, key(ns, name), route); err != nil {
			return err
		}
		route.Status.Parents = []gatewayv1.RouteParentStatus{{
			ParentRef:      route.Spec.ParentRefs[0],
			ControllerName: "example.com/gateway",
			Conditions: []metav1.Condition{{Type: string(gatewayv1.RouteConditionAccepted), Status: status, Reason: reason,
				Message: "set by the test", LastTransitionTime: metav1.Now(), ObservedGeneration: route.Generation}},
		}}
		return k8s.Status().Update(ctx, route)
	}).Should(Succeed())
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

// TestAGatewayMapHandsOverThroughItsSuccessorsRoute: a map behind a
// Gateway hands over like a Direct one, to a URL of the new pod's own:
// the new pod gets a Service selecting it alone and an HTTPRoute for
// <map path>/<pod>/ws; the old pod is told that URL only once the Gateway
// accepted the route, even with the new pod Ready; the route of a pod
// that no longer serves the map goes with the next handover.
func TestAGatewayMapHandsOverThroughItsSuccessorsRoute(t *testing.T) {
	ctx, ns := envtestNamespace(t)
	g := wait(t)
	gw := gamev1.Exposure{Type: gamev1.ExposureGateway, Gateway: &gamev1.GatewayExposure{
		Name: "public", Hostname: "games.example.com", Port: 8443}}
	g.Expect(k8s.Create(ctx, &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "public"},
		Spec: gatewayv1.GatewaySpec{GatewayClassName: "any", Listeners: []gatewayv1.Listener{{
			Name: "https", Port: 443, Protocol: gatewayv1.HTTPSProtocolType}}}})).To(Succeed())
	createRoom(ctx, t, ns, newGameRoom("demo", withMap("town"), withExposure(gw)))
	currentPodUID(ctx, g, ns, "")
	setRouteAccepted(ctx, g, ns, metav1.ConditionTrue, "Accepted")
	startPod(ctx, g, ns, "10.1.2.3")
	g.Eventually(func() gamev1.PodReplacement { return mapInstance(ctx, g, ns).Status.PodReplacement }).
		Should(Equal(gamev1.ReplaceByHandover))
	g.Eventually(func() string { return mapPathPod(ctx, g, ns) }).Should(Equal("demo-town"))
	// A pod an earlier operator made has no labelPod: it gets it, and the
	// map's path leads to it.
	pod := &corev1.Pod{}
	g.Expect(k8s.Get(ctx, key(ns, "demo-town"), pod)).To(Succeed())
	unlabelled := client.MergeFrom(pod.DeepCopy())
	delete(pod.Labels, labelPod)
	g.Expect(k8s.Patch(ctx, pod, unlabelled)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, key(ns, "demo-town"), pod)).To(Succeed())
		g.Expect(pod.Labels).To(HaveKeyWithValue(labelPod, "demo-town"))
	}).Should(Succeed())

	first := handOverBehindTheGateway(ctx, g, ns, "roomkeeper/roomserver:v2", "10.1.2.4")
	second := handOverBehindTheGateway(ctx, g, ns, "roomkeeper/roomserver:v3", "10.1.2.5")
	g.Eventually(func(g Gomega) {
		g.Expect(apierrors.IsNotFound(k8s.Get(ctx, key(ns, first), &gatewayv1.HTTPRoute{}))).To(BeTrue(), "the route of a pod gone")
		g.Expect(apierrors.IsNotFound(k8s.Get(ctx, key(ns, first), &corev1.Service{}))).To(BeTrue())
		g.Expect(k8s.Get(ctx, key(ns, second), &gatewayv1.HTTPRoute{})).To(Succeed(), "the serving pod's route stays")
		g.Expect(k8s.Get(ctx, key(ns, "demo-town"), &gatewayv1.HTTPRoute{})).To(Succeed(), "the map's own route stays")
		g.Expect(mapInstance(ctx, g, ns).Status.Endpoint).To(Equal("wss://games.example.com:8443/" + ns + "/demo/town/ws"))
	}).Should(Succeed())
}

// handOverBehindTheGateway rolls the Gateway map of TestAGatewayMapHands...
// to image and plays the new pod (at ip) and the Gateway through the
// handover; it returns the new pod's name.
func handOverBehindTheGateway(ctx context.Context, g Gomega, ns, image, ip string) string {
	old := mapInstance(ctx, g, ns).Status.PodName
	changeImage(ctx, g, ns, image)
	next := successorPod(ctx, g, ns)
	g.Expect(next.Labels).To(HaveKeyWithValue(labelPod, next.Name))
	route, svc := &gatewayv1.HTTPRoute{}, &corev1.Service{}
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, key(ns, next.Name), route)).To(Succeed())
		g.Expect(k8s.Get(ctx, key(ns, next.Name), svc)).To(Succeed())
	}).Should(Succeed())
	path := "/" + ns + "/demo/town/" + next.Name + "/ws"
	g.Expect(*route.Spec.Rules[0].Matches[0].Path.Value).To(Equal(path))
	g.Expect(string(route.Spec.Rules[0].BackendRefs[0].Name)).To(Equal(next.Name))
	g.Expect(svc.Spec.Selector).To(HaveKeyWithValue(labelPod, next.Name))

	holdPod(ctx, g, ns, old, true)
	setPodStatus(ctx, g, ns, next.Name, runningReady(ip))
	g.Consistently(func() string { return handoverEndpoint(ctx, g, ns) }).
		Should(BeEmpty(), "no handover to a route the Gateway has not accepted")
	g.Expect(mapPathPod(ctx, g, ns)).To(Equal(old), "the map's path leads to the old pod while it serves the map")
	setNamedRouteAccepted(ctx, g, ns, next.Name, metav1.ConditionTrue, "Accepted")
	g.Eventually(func() string { return handoverEndpoint(ctx, g, ns) }).Should(Equal("wss://games.example.com:8443"+path), "the old pod hands over to the new pod's own URL")
	g.Eventually(func() string { return mapPathPod(ctx, g, ns) }).Should(Equal(next.Name), "the map's path leads to the new pod once it serves the map")
	// The old pod waits until the map's path leaves it (AwaitSuccessor):
	// its heartbeats' answers name the path.
	reporter, err := heartbeat.New(restConfig, ns, "demo-town", testClock.Now)
	g.Expect(err).NotTo(HaveOccurred())
	h, err := reporter.Handover(ctx, heartbeat.Report{}, next.Name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h.MapEndpoint).To(Equal("wss://games.example.com:8443/" + ns + "/demo/town/ws"))
	holdPod(ctx, g, ns, old, false)
	g.Eventually(func(g Gomega) {
		mi := mapInstance(ctx, g, ns)
		g.Expect(mi.Status.Handover).To(BeNil())
		g.Expect(mi.Status.PodName).To(Equal(next.Name))
		g.Expect(mi.Status.RestartCount).To(BeZero())
	}).Should(Succeed())
	return next.Name
}

// mapPathPod is the pod the Service behind the map's own path selects.
func mapPathPod(ctx context.Context, g Gomega, ns string) string {
	svc := &corev1.Service{}
	g.Expect(k8s.Get(ctx, key(ns, "demo-town"), svc)).To(Succeed())
	return svc.Spec.Selector[labelPod]
}

// handoverEndpoint is where the map's old pod is to hand over, "" when
// no handover is under way or it has no target yet.
func handoverEndpoint(ctx context.Context, g Gomega, ns string) string {
	if h := mapInstance(ctx, g, ns).Status.Handover; h != nil {
		return h.Endpoint
	}
	return ""
}
