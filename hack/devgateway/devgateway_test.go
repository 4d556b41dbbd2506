package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/roomkeeper/roomkeeper/hack/internal/devlog"
	"github.com/roomkeeper/roomkeeper/internal/testenv"
	"github.com/roomkeeper/roomkeeper/internal/wait"
)

// Test timings: generous deadlines for a loaded CI machine running -race.
const (
	waitTimeout = 60 * time.Second
	gatewayNS   = "gateway-system"
	gatewayName = "dev"
)

// Shared by every test: one control plane and one gateway serving
// gateway-system/dev, whose listener "https" takes routes from every
// namespace and "https-same" from gateway-system only.
var (
	k8s         client.Client
	gatewayAddr string         // the gateway's TLS listener
	healthAddr  string         // its /healthz listener
	roots       *x509.CertPool // holds the ca.crt the gateway wrote
)

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "devgateway-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	env, err := startControlPlane()
	if err != nil {
		fmt.Fprintln(os.Stderr, "devgateway tests need a control plane:", err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	logs := &syncBuffer{}
	stop, err := setup(env.Config, dir, logs)
	if err == nil {
		defer func() {
			if err := stop(); err != nil {
				fmt.Fprintln(os.Stderr, err)
			}
		}()
	}
	code := 1
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = m.Run()
	}
	if code != 0 || testing.Verbose() {
		fmt.Fprintf(os.Stderr, "--- devgateway log:\n%s", logs.String())
	}
	return code
}

// startControlPlane runs kube-apiserver and etcd with the Gateway API's
// standard CRDs from the module go.mod requires.
func startControlPlane() (*envtest.Environment, error) {
	assets, err := testenv.AssetsDir()
	if err != nil {
		return nil, err
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/gateway-api").Output()
	if err != nil {
		return nil, fmt.Errorf("locating the sigs.k8s.io/gateway-api module (try `go mod download`): %w", err)
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(strings.TrimSpace(string(out)), "config", "crd", "standard")},
		ErrorIfCRDPathMissing: true,
	}
	if _, err := env.Start(); err != nil {
		return nil, fmt.Errorf("starting kube-apiserver and etcd from %s: %w", assets, err)
	}
	return env, nil
}

// setup starts the gateway in-process, as main would with a kubeconfig, and
// creates its GatewayClass and Gateway. stop ends the gateway.
func setup(cfg *rest.Config, dir string, logs io.Writer) (stop func() error, err error) {
	scheme := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), gatewayv1.Install(scheme)); err != nil {
		return nil, err
	}
	if k8s, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := testenv.WriteKubeconfig(kubeconfig, "devgateway-test", cfg); err != nil {
		return nil, err
	}
	var ls listeners
	if ls.tls, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return nil, err
	}
	if ls.health, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return nil, err
	}
	gatewayAddr, healthAddr = ls.tls.Addr().String(), ls.health.Addr().String()
	certDir := filepath.Join(dir, "certs")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, config{
			kubeconfig: kubeconfig, listen: gatewayAddr, gatewayClass: testClass,
			certDir: certDir, hostnames: []string{"localhost", publicHost},
		}, ls, devlog.New(logs))
	}()
	stop = func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(waitTimeout):
			return errors.New("the gateway did not stop")
		}
	}
	if err := createGateway(); err != nil {
		return stop, err
	}
	err = wait.For(waitTimeout, func() error {
		resp, err := http.Get("http://" + healthAddr + "/healthz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return errors.New(resp.Status)
		}
		return nil
	})
	if err != nil {
		return stop, fmt.Errorf("gateway not healthy: %w", err)
	}
	ca, err := os.ReadFile(filepath.Join(certDir, caFile))
	if err != nil {
		return stop, err
	}
	roots = x509.NewCertPool()
	roots.AppendCertsFromPEM(ca)
	return stop, nil
}

// createGateway creates the GatewayClass and the Gateway the tests route
// through.
func createGateway() error {
	ctx := context.Background()
	class := &gatewayv1.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: testClass},
		Spec:       gatewayv1.GatewayClassSpec{ControllerName: controllerName},
	}
	gw := newGateway(gatewayNS, gatewayName, testClass,
		httpsListener("https", 443, gatewayv1.NamespacesFromAll),
		httpsListener("https-same", 8443, gatewayv1.NamespacesFromSame))
	for _, obj := range []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: gatewayNS}}, class, gw} {
		if err := k8s.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
		}
	}
	return nil
}

// eventually waits waitTimeout for cond to hold.
func eventually(t *testing.T, what string, cond func() error) {
	t.Helper()
	wait.Eventually(t, waitTimeout, what, cond)
}

func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "devgateway-"}}
	if err := k8s.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// create creates objs and deletes them when the test ends: without a
// namespace controller, deleting the namespace would leave them, and an
// older route keeps its paths from a newer one.
func create(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, obj := range objs {
		if err := k8s.Create(t.Context(), obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
		t.Cleanup(func() {
			if err := k8s.Delete(context.Background(), obj); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting %T %s: %v", obj, obj.GetName(), err)
			}
		})
	}
}

// waitParent waits until route ns/name has this gateway's status entry for
// the parentRef to gateway (and section, unless "") with the Accepted and
// ResolvedRefs conditions summarised as "Accepted=True/Accepted" etc.
func waitParent(t *testing.T, ns, name, gateway, section, accepted, resolved string) *gatewayv1.HTTPRoute {
	t.Helper()
	var route gatewayv1.HTTPRoute
	eventually(t, fmt.Sprintf("route %s/%s parent %s %s, %s", ns, name, gateway, accepted, resolved), func() error {
		if err := k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &route); err != nil {
			return err
		}
		for _, p := range ourParents(&route) {
			if string(p.ParentRef.Name) != gateway || string(ptrOr(p.ParentRef.SectionName)) != section {
				continue
			}
			got := conditionSummary(p.Conditions, "Accepted") + ", " + conditionSummary(p.Conditions, "ResolvedRefs")
			if got != accepted+", "+resolved {
				return errors.New(got)
			}
			return nil
		}
		return fmt.Errorf("no entry in %+v", route.Status.Parents)
	})
	return &route
}

func ptrOr[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// get sends GET path with the Host header host to the gateway, over TLS
// with SNI games.localtest, trusting only the gateway's ca.crt.
func get(t *testing.T, host, path string) (int, string) {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: publicHost}}}
	defer client.CloseIdleConnections()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "https://"+gatewayAddr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// dial opens a WebSocket through the gateway as a player would:
// wss://games.localtest:PORT/path, resolved to the gateway's address.
func dial(ctx context.Context, path string) (*websocket.Conn, error) {
	_, port, _ := net.SplitHostPort(gatewayAddr)
	d := websocket.Dialer{
		TLSClientConfig:  &tls.Config{RootCAs: roots, ServerName: publicHost},
		HandshakeTimeout: 10 * time.Second,
	}
	header := http.Header{"Host": {publicHost + ":" + port}}
	conn, resp, err := d.DialContext(ctx, "wss://"+gatewayAddr+path, header)
	if resp != nil {
		defer resp.Body.Close()
	}
	if err != nil && resp != nil {
		body, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("%w: %s %s", err, resp.Status, bytes.TrimSpace(body))
	}
	return conn, err
}

// echoServer is a WebSocket echo server standing in for a room server.
type echoServer struct {
	port int32
	seen chan seenRequest
}

// seenRequest is what the echo server saw of an upgrade request.
type seenRequest struct {
	path, host, forwardedProto string
}

// startEcho runs an echo server on ip until the test ends.
func startEcho(t *testing.T, ip string) *echoServer {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	e := &echoServer{port: int32(l.Addr().(*net.TCPAddr).Port), seen: make(chan seenRequest, 16)}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(e.serve))
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return e
}

func (e *echoServer) serve(w http.ResponseWriter, r *http.Request) {
	select {
	case e.seen <- seenRequest{path: r.URL.Path, host: r.Host, forwardedProto: r.Header.Get("X-Forwarded-Proto")}:
	default:
	}
	var upgrader websocket.Upgrader
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer conn.Close()
	for {
		kind, data, err := conn.ReadMessage()
		if err != nil {
			return
		}
		if err := conn.WriteMessage(kind, data); err != nil {
			return
		}
	}
}

// exchange dials path through the gateway, until the route is served,
// sends a message and checks the echo; it returns what the echo server saw.
func exchange(t *testing.T, e *echoServer, path string) seenRequest {
	t.Helper()
	var conn *websocket.Conn
	eventually(t, "a WebSocket through the gateway", func() (err error) {
		conn, err = dial(t.Context(), path)
		return err
	})
	defer conn.Close()
	if err := conn.WriteMessage(websocket.TextMessage, []byte("hello room")); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(waitTimeout))
	_, got, err := conn.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "hello room" {
		t.Errorf("echo %q, want %q", got, "hello room")
	}
	select {
	case seen := <-e.seen:
		return seen
	default:
		t.Fatal("the echo server saw no request")
		return seenRequest{}
	}
}

// nonLoopbackIP is an IPv4 address of an interface that is up and not
// loopback: EndpointSlices may not hold loopback addresses.
func nonLoopbackIP(t *testing.T) string {
	t.Helper()
	ifaces, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, iface := range ifaces {
		if iface.Flags&net.FlagUp == 0 || iface.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, _ := iface.Addrs()
		for _, a := range addrs {
			if ipnet, ok := a.(*net.IPNet); ok && ipnet.IP.To4() != nil && ipnet.IP.IsGlobalUnicast() {
				return ipnet.IP.String()
			}
		}
	}
	t.Fatal("the API server rejects loopback addresses in EndpointSlices, so this test runs its echo server " +
		"on a non-loopback IPv4 address, and this machine has none: give it a network interface")
	return ""
}

func TestGatewayAndClassAreAccepted(t *testing.T) {
	var class gatewayv1.GatewayClass
	eventually(t, "GatewayClass Accepted", func() error {
		if err := k8s.Get(t.Context(), client.ObjectKey{Name: testClass}, &class); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(class.Status.Conditions, "Accepted") {
			return errors.New(conditionSummary(class.Status.Conditions, "Accepted"))
		}
		return nil
	})
	var gw gatewayv1.Gateway
	eventually(t, "Gateway Accepted and Programmed", func() error {
		if err := k8s.Get(t.Context(), client.ObjectKey{Namespace: gatewayNS, Name: gatewayName}, &gw); err != nil {
			return err
		}
		for _, c := range []string{"Accepted", "Programmed"} {
			if !meta.IsStatusConditionTrue(gw.Status.Conditions, c) {
				return errors.New(conditionSummary(gw.Status.Conditions, c))
			}
		}
		return nil
	})
	if len(gw.Status.Addresses) != 1 || gw.Status.Addresses[0].Value != "127.0.0.1" ||
		ptrOr(gw.Status.Addresses[0].Type) != gatewayv1.IPAddressType {
		t.Errorf("status.addresses %+v, want the IPAddress 127.0.0.1", gw.Status.Addresses)
	}
}

// The operator's route, to a Service whose EndpointSlice names the echo
// server: a player's wss:// connection reaches /ws with the public host.
func TestWebSocketThroughEndpointSlice(t *testing.T) {
	ip := nonLoopbackIP(t)
	echo := startEcho(t, ip)
	ns := newNamespace(t)
	create(t,
		newService(ns, "town", echo.port, nil),
		newEndpointSlice(ns, "town", echo.port, ip),
		operatorRoute(ns, "town", gatewayNS, gatewayName, "/games/demo/town/ws", "town"))
	waitParent(t, ns, "town", gatewayName, "", "Accepted=True/Accepted", "ResolvedRefs=True/ResolvedRefs")

	seen := exchange(t, echo, "/games/demo/town/ws")
	_, port, _ := net.SplitHostPort(gatewayAddr)
	if want := (seenRequest{path: "/ws", host: publicHost + ":" + port, forwardedProto: "https"}); seen != want {
		t.Errorf("echo server saw %+v, want %+v", seen, want)
	}

	var gw gatewayv1.Gateway
	eventually(t, "the route counted on listener https", func() error {
		if err := k8s.Get(t.Context(), client.ObjectKey{Namespace: gatewayNS, Name: gatewayName}, &gw); err != nil {
			return err
		}
		for _, l := range gw.Status.Listeners {
			if l.Name == "https" && l.AttachedRoutes > 0 {
				return nil
			}
		}
		return fmt.Errorf("listeners %+v", gw.Status.Listeners)
	})
}

// In the development cluster pods have loopback addresses, which
// EndpointSlices cannot hold: the gateway finds the Service's ready Pods.
func TestWebSocketThroughPodAddress(t *testing.T) {
	echo := startEcho(t, "127.0.0.1")
	ns := newNamespace(t)
	selector := map[string]string{"roomkeeper.dev/map": "cave"}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cave", Labels: selector},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "roomserver", Image: "roomkeeper/roomserver",
			Ports: []corev1.ContainerPort{{Name: "game", ContainerPort: echo.port}},
		}}},
	}
	svc := newService(ns, "cave", 0, selector)
	svc.Spec.Ports[0].TargetPort = intstr.FromString("game")
	create(t, pod, svc)
	pod.Status = corev1.PodStatus{
		Phase:      corev1.PodRunning,
		PodIP:      "127.0.0.1",
		PodIPs:     []corev1.PodIP{{IP: "127.0.0.1"}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
	}
	if err := k8s.Status().Update(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	create(t, operatorRoute(ns, "cave", gatewayNS, gatewayName, "/games/demo/cave/ws", "cave"))
	waitParent(t, ns, "cave", gatewayName, "", "Accepted=True/Accepted", "ResolvedRefs=True/ResolvedRefs")
	if seen := exchange(t, echo, "/games/demo/cave/ws"); seen.path != "/ws" {
		t.Errorf("echo server saw path %q, want /ws", seen.path)
	}
}

func TestMissingServiceAnswers503(t *testing.T) {
	ns := newNamespace(t)
	create(t, operatorRoute(ns, "lost", gatewayNS, gatewayName, "/games/demo/lost/ws", "lost"))
	waitParent(t, ns, "lost", gatewayName, "", "Accepted=True/Accepted", "ResolvedRefs=False/BackendNotFound")
	if code, body := get(t, publicHost, "/games/demo/lost/ws"); code != http.StatusServiceUnavailable {
		t.Errorf("GET: %d %s, want 503", code, body)
	}
}

func TestUnknownPathAnswers404(t *testing.T) {
	ns := newNamespace(t)
	create(t, operatorRoute(ns, "known", gatewayNS, gatewayName, "/games/known/town/ws", "absent"))
	waitParent(t, ns, "known", gatewayName, "", "Accepted=True/Accepted", "ResolvedRefs=False/BackendNotFound")
	for _, tt := range []struct {
		host, path string
		want       int
	}{
		{publicHost, "/games/known/town/ws/deeper", http.StatusServiceUnavailable}, // routed, to nothing
		{publicHost, "/games/known/town/wsx", http.StatusNotFound},
		{publicHost, "/nowhere", http.StatusNotFound},
		{"other.localtest", "/games/known/town/ws", http.StatusNotFound},
	} {
		if code, body := get(t, tt.host, tt.path); code != tt.want {
			t.Errorf("GET %s%s: %d %s, want %d", tt.host, tt.path, code, body, tt.want)
		}
	}
}

func TestRouteToMissingGatewayIsNotAccepted(t *testing.T) {
	ns := newNamespace(t)
	create(t, operatorRoute(ns, "stray", gatewayNS, "nope", "/games/stray/town/ws", "absent"))
	waitParent(t, ns, "stray", "nope", "", "Accepted=False/NoMatchingParent", "ResolvedRefs=False/BackendNotFound")
}

func TestListenerMustAdmitTheRoute(t *testing.T) {
	ns := newNamespace(t)
	create(t, newRoute(ns, "picky",
		withParent(parentRef(gatewayNS, gatewayName, "https-same")),
		withParent(parentRef(gatewayNS, gatewayName, "nope")),
		withRule(prefixRule("/games/picky", "", "absent", 80))))
	waitParent(t, ns, "picky", gatewayName, "https-same", "Accepted=False/NotAllowedByListeners", "ResolvedRefs=False/BackendNotFound")
	waitParent(t, ns, "picky", gatewayName, "nope", "Accepted=False/NoMatchingParent", "ResolvedRefs=False/BackendNotFound")
	if code, body := get(t, publicHost, "/games/picky"); code != http.StatusNotFound {
		t.Errorf("GET through a route no listener admits: %d %s, want 404", code, body)
	}
}

// Another implementation's parent entry survives the gateway's status
// writes, and the gateway writes none for the other implementation's
// Gateway.
func TestOtherControllersParentEntriesAreKept(t *testing.T) {
	ns := newNamespace(t)
	other := newGateway(gatewayNS, "istio-"+ns, "istio", httpsListener("https", 443, gatewayv1.NamespacesFromAll))
	route := operatorRoute(ns, "shared", gatewayNS, gatewayName, "/games/shared/town/ws", "absent",
		withParent(parentRef(gatewayNS, other.Name, "")))
	create(t, other, route)
	theirs := gatewayv1.RouteParentStatus{
		ParentRef:      parentRef(gatewayNS, other.Name, ""),
		ControllerName: "istio.io/gateway-controller",
		Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted",
			Message: "by istio", LastTransitionTime: metav1.Now()}},
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(route), route); err != nil {
			return err
		}
		route.Status.Parents = append(route.Status.Parents, theirs)
		return k8s.Status().Update(t.Context(), route)
	})
	if err != nil {
		t.Fatal(err)
	}
	waitParent(t, ns, "shared", gatewayName, "", "Accepted=True/Accepted", "ResolvedRefs=False/BackendNotFound")
	eventually(t, "the other controller's entry kept and none of ours for its Gateway", func() error {
		if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(route), route); err != nil {
			return err
		}
		kept := false
		for _, p := range route.Status.Parents {
			switch {
			case p.ControllerName == theirs.ControllerName:
				kept = string(p.ParentRef.Name) == other.Name && len(p.Conditions) == 1 && p.Conditions[0].Message == "by istio"
			case string(p.ParentRef.Name) == other.Name:
				return fmt.Errorf("an entry of ours for another class's Gateway: %+v", p)
			}
		}
		if !kept {
			return fmt.Errorf("the other controller's entry is gone or changed: %+v", route.Status.Parents)
		}
		return nil
	})
}

func TestHealthz(t *testing.T) {
	resp, err := http.Get("http://" + healthAddr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz: %s", resp.Status)
	}
}

// syncBuffer collects the gateway's log for a failed run.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
