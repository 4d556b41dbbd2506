package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	stdlog "log"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// apiTimeout bounds every API request the gateway makes.
const apiTimeout = 30 * time.Second

// Timeouts of the gateway's HTTP servers. There is no read or write
// timeout: WebSocket connections live as long as their players.
const (
	readHeaderTimeout = 10 * time.Second
	shutdownTimeout   = 5 * time.Second
)

// everything is the gateway's only reconcile request: a change to any
// watched object recomputes the whole routing table and every status,
// which at development scale is cheap and cannot miss a dependency.
var everything = reconcile.Request{NamespacedName: types.NamespacedName{Name: "devgateway"}}

// gateway keeps the routing table and the statuses of the Gateway API
// objects it serves, and proxies requests by the table.
type gateway struct {
	client    client.Client
	log       logr.Logger
	opts      options
	transport http.RoundTripper
	table     atomic.Pointer[routeTable] // nil until the first reconcile
}

// run serves the Gateways of cfg's class on ls until ctx ends.
func run(ctx context.Context, cfg config, ls listeners, log logr.Logger) error {
	defer closeAll(ls)
	ctrllog.SetLogger(log)
	restConfig, err := clientcmd.BuildConfigFromFlags("", cfg.kubeconfig)
	if err != nil {
		return fmt.Errorf("loading %s: %w", cfg.kubeconfig, err)
	}
	restConfig.Timeout = apiTimeout
	cert, reason, err := loadOrCreateCertificate(cfg.certDir, cfg.hostnames, time.Now())
	if err != nil {
		return fmt.Errorf("serving certificate in %s: %w", cfg.certDir, err)
	}
	if reason != "" {
		log.Info("Wrote a new CA and serving certificate: clients must trust the new ca.crt",
			"dir", cfg.certDir, "names", cfg.hostnames, "reason", reason)
	} else {
		log.Info("Reusing the serving certificate", "dir", cfg.certDir, "names", cfg.hostnames)
	}
	g := &gateway{
		log:       log,
		opts:      options{className: cfg.gatewayClass, address: statusAddress(ls.tls.Addr())},
		transport: newTransport(),
	}
	mgr, err := newManager(restConfig, log)
	if err != nil {
		return err
	}
	g.client = mgr.GetClient()
	if err := g.setupWithManager(mgr); err != nil {
		return err
	}
	if err := mgr.Add(serveUntilDone(g.tlsServer(cert), ls.tls, true)); err != nil {
		return err
	}
	if ls.health != nil {
		if err := mgr.Add(serveUntilDone(g.healthServer(), ls.health, false)); err != nil {
			return err
		}
	}
	log.Info("Serving Gateways", "gatewayClass", cfg.gatewayClass, "listen", ls.tls.Addr().String())
	return mgr.Start(ctx)
}

// newManager is a controller-runtime manager with a cache of the kinds the
// gateway reads, and no metrics or probe servers of its own.
func newManager(restConfig *rest.Config, log logr.Logger) (manager.Manager, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, gatewayv1.Install} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	return manager.New(restConfig, manager.Options{
		Scheme:  scheme,
		Logger:  log,
		Metrics: metricsserver.Options{BindAddress: "0"},
		Cache:   cache.Options{DefaultTransform: cache.TransformStripManagedFields()},
	})
}

// setupWithManager reconciles everything whenever a GatewayClass, Gateway,
// HTTPRoute, Service, EndpointSlice or Pod changes, and once at start.
func (g *gateway) setupWithManager(mgr manager.Manager) error {
	all := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{everything}
	})
	return builder.ControllerManagedBy(mgr).
		Named("devgateway").
		Watches(&gatewayv1.GatewayClass{}, all).
		Watches(&gatewayv1.Gateway{}, all).
		Watches(&gatewayv1.HTTPRoute{}, all).
		Watches(&corev1.Service{}, all).
		Watches(&discoveryv1.EndpointSlice{}, all).
		Watches(&corev1.Pod{}, all).
		WatchesRawSource(source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
			q.Add(everything) // an empty cluster gets a routing table too
			return nil
		})).
		Complete(g)
}

// Reconcile recomputes the routing table from the cache, serves it, and
// writes the statuses that changed.
func (g *gateway) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	s, err := g.read(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	p := makePlan(s, g.opts, metav1.Now())
	g.table.Store(p.table)
	return reconcile.Result{}, g.writeStatuses(ctx, p.updates)
}

// read lists every object the gateway acts on from the cache.
func (g *gateway) read(ctx context.Context) (snapshot, error) {
	var (
		classes   gatewayv1.GatewayClassList
		gateways  gatewayv1.GatewayList
		routes    gatewayv1.HTTPRouteList
		services  corev1.ServiceList
		endpoints discoveryv1.EndpointSliceList
		pods      corev1.PodList
	)
	for _, list := range []client.ObjectList{&classes, &gateways, &routes, &services, &endpoints, &pods} {
		if err := g.client.List(ctx, list); err != nil {
			return snapshot{}, err
		}
	}
	return snapshot{
		classes:  classes.Items,
		gateways: gateways.Items,
		routes:   routes.Items,
		services: services.Items,
		slices:   endpoints.Items,
		pods:     pods.Items,
	}, nil
}

// writeStatuses patches each status that changed. Patches of a shared
// status (HTTPRoute status.parents, where other controllers keep entries)
// carry the resourceVersion read, so that an entry another controller wrote
// meanwhile makes the patch fail and the next reconcile keep it. Gateway
// and GatewayClass statuses are this gateway's alone: a patch computed from
// a stale cache is corrected by the reconcile its update event triggers.
func (g *gateway) writeStatuses(ctx context.Context, updates []statusUpdate) error {
	log := logr.FromContextOrDiscard(ctx)
	var errs []error
	for _, u := range updates {
		key := u.before.GetName()
		if ns := u.before.GetNamespace(); ns != "" {
			key = ns + "/" + key
		}
		patch := client.MergeFrom(u.before)
		if u.shared {
			patch = client.MergeFromWithOptions(u.before, client.MergeFromWithOptimisticLock{})
		}
		if err := g.client.Status().Patch(ctx, u.after, patch); err != nil {
			if !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("updating the status of %s %s: %w", u.kind, key, err))
			}
			continue
		}
		log.Info("Status updated", "kind", u.kind, "object", key)
	}
	return errors.Join(errs...)
}

// tlsServer serves the routing table over TLS with cert. It speaks only
// HTTP/1.1: over HTTP/2 browsers may open WebSockets with extended CONNECT
// (RFC 8441), which the proxy does not translate for the backends.
func (g *gateway) tlsServer(cert tls.Certificate) *http.Server {
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	return &http.Server{
		Handler:           g,
		ReadHeaderTimeout: readHeaderTimeout,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		Protocols:         &protocols,
		ErrorLog:          stdlog.New(logWriter{g.log}, "", 0),
	}
}

// healthServer answers /healthz: 200 once the routing table is loaded.
func (g *gateway) healthServer() *http.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		if g.table.Load() == nil {
			http.Error(w, "routes not loaded yet", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	return &http.Server{Handler: mux, ReadHeaderTimeout: readHeaderTimeout, ErrorLog: stdlog.New(logWriter{g.log}, "", 0)}
}

// serveUntilDone runs srv on l until the manager stops, then shuts it
// down. Hijacked (WebSocket) connections are not waited for.
func serveUntilDone(srv *http.Server, l net.Listener, useTLS bool) manager.RunnableFunc {
	return func(ctx context.Context) error {
		stopped := make(chan struct{})
		go func() {
			defer close(stopped)
			<-ctx.Done()
			shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
			defer cancel()
			_ = srv.Shutdown(shutdownCtx) // past the timeout, connections close with the process
		}()
		var err error
		if useTLS {
			err = srv.ServeTLS(l, "", "")
		} else {
			err = srv.Serve(l)
		}
		if !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		<-stopped
		return nil
	}
}

// statusAddress is the Gateway status address for a listener: its IP, or
// 127.0.0.1 when it listens on every address.
func statusAddress(addr net.Addr) gatewayv1.GatewayStatusAddress {
	ip := "127.0.0.1"
	if tcp, ok := addr.(*net.TCPAddr); ok && !tcp.IP.IsUnspecified() {
		ip = tcp.IP.String()
	}
	return gatewayv1.GatewayStatusAddress{Type: ptr.To(gatewayv1.IPAddressType), Value: ip}
}

// newTransport is the proxy's transport: the default one, except that
// endpoints are always dialled directly, never through an HTTP proxy.
func newTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	return t
}

// closeAll closes the listeners; those a server already closed return an
// error, which is of no interest.
func closeAll(ls listeners) {
	for _, l := range []net.Listener{ls.tls, ls.health} {
		if l != nil {
			_ = l.Close()
		}
	}
}

// logWriter logs the net/http servers' own messages (such as TLS
// handshake errors) as the gateway's.
type logWriter struct{ log logr.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.log.Info("HTTP server", "message", strings.TrimSpace(string(p)))
	return len(p), nil
}
