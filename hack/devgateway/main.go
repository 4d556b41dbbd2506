// Command devgateway is a development Gateway API implementation: it serves
// the Gateways of one GatewayClass on a local TLS listener and proxies to
// the ready endpoints of their HTTPRoutes' Services, so that `make dev` can
// prove the operator's HTTPRoutes carry WebSocket traffic over TLS without
// Envoy or Istio. It is a development tool, not part of the product.
//
// Usage:
//
//	devgateway --kubeconfig PATH --cert-dir DIR [--listen 127.0.0.1:8443] \
//	    [--gateway-class roomkeeper-dev] [--hostnames games.localtest,...] \
//	    [--http-listen 127.0.0.1:8080]
//
// On first start it writes a new CA (ca.crt) and a serving certificate
// (tls.crt, tls.key) it signs for localhost, --hostnames and 127.0.0.1 to
// --cert-dir; later starts reuse them while they are valid for those names.
// The CA may sign only those names and its key is not kept, so trusting
// ca.crt trusts nothing else. --http-listen serves /healthz, which answers
// 200 once the routes are loaded.
//
// The subset of the Gateway API it implements:
//
//   - GatewayClass: the class named --gateway-class gets Accepted=True when
//     its controllerName is roomkeeper.dev/devgateway.
//   - Gateway: every Gateway of that class is served, all of them on the one
//     --listen address with the gateway's own certificate (listener ports,
//     hostnames and certificateRefs are not read). Status: Accepted and
//     Programmed True, the listen IP as address, and per listener its
//     attached routes; only HTTP and HTTPS listeners take routes.
//   - HTTPRoute: parentRefs to those Gateways (namespace defaulting to the
//     route's, optional sectionName and port) attach when a listener's
//     allowedRoutes admit the route's namespace (from Same or All; Selector
//     admits nothing). Requests match on the Host header (the route's
//     hostnames exactly, port stripped; none means any host) and on Exact
//     and PathPrefix path matches, most specific first. The URLRewrite
//     filter (ReplacePrefixMatch, ReplaceFullPath, hostname) is applied;
//     header, query and method matches and other filters make the route
//     Accepted=False UnsupportedValue. backendRefs name Services in the
//     route's namespace (ReferenceGrant is not supported); a request goes to
//     a ready address of the Service port's EndpointSlices, picked by
//     backendRef weight and then at random, since the development cluster
//     has no kube-proxy. When the EndpointSlices list no ready address and
//     the Service has a selector, the ready Pods it selects stand in:
//     localnode gives pods loopback addresses, which the API server refuses
//     in EndpointSlices. The route's status.parents entries for these
//     Gateways carry Accepted and ResolvedRefs; other controllers' entries
//     are left alone.
//
// A request no route matches gets 404; one whose backend has no ready
// endpoint (or does not resolve) gets 503. Proxying is plain HTTP/1.1 to
// the endpoint, WebSocket upgrades included.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/roomkeeper/roomkeeper/hack/internal/devlog"
)

// config is the gateway's command line.
type config struct {
	kubeconfig   string   // the cluster whose Gateways are served
	listen       string   // TLS listener, host:port
	httpListen   string   // plain HTTP listener for /healthz; "" for none
	gatewayClass string   // Gateways of this class are served
	certDir      string   // holds ca.crt, tls.crt and tls.key
	hostnames    []string // names the serving certificate is for, localhost first
}

// listeners are the sockets the gateway serves on; health may be nil.
type listeners struct {
	tls, health net.Listener
}

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "devgateway:", err)
		os.Exit(2)
	}
	if err := runUntilSignal(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "devgateway:", err)
		os.Exit(1)
	}
}

// runUntilSignal opens the listeners and serves until SIGINT or SIGTERM.
func runUntilSignal(cfg config) (err error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var ls listeners
	if ls.tls, err = net.Listen("tcp", cfg.listen); err != nil {
		return err
	}
	if cfg.httpListen != "" {
		if ls.health, err = net.Listen("tcp", cfg.httpListen); err != nil {
			ls.tls.Close()
			return err
		}
	}
	return run(ctx, cfg, ls, devlog.New(os.Stderr))
}

// parseFlags reads and checks the command line.
func parseFlags(args []string, out io.Writer) (config, error) {
	fs := flag.NewFlagSet("devgateway", flag.ContinueOnError)
	fs.SetOutput(out)
	var cfg config
	var hostnames string
	fs.StringVar(&cfg.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster whose Gateways to serve (required)")
	fs.StringVar(&cfg.listen, "listen", "127.0.0.1:8443", "TLS address to serve the Gateways on")
	fs.StringVar(&cfg.httpListen, "http-listen", "", "plain HTTP address for /healthz (optional)")
	fs.StringVar(&cfg.gatewayClass, "gateway-class", "roomkeeper-dev", "GatewayClass whose Gateways to serve")
	fs.StringVar(&cfg.certDir, "cert-dir", "", "directory for ca.crt, tls.crt and tls.key (required)")
	fs.StringVar(&hostnames, "hostnames", "localhost", "comma-separated DNS names for the serving certificate, besides localhost")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if cfg.kubeconfig == "" || cfg.certDir == "" {
		return config{}, errors.New("--kubeconfig and --cert-dir are required")
	}
	if cfg.gatewayClass == "" {
		return config{}, errors.New("--gateway-class must not be empty")
	}
	names, err := parseHostnames(hostnames)
	if err != nil {
		return config{}, err
	}
	cfg.hostnames = names
	for _, p := range []*string{&cfg.kubeconfig, &cfg.certDir} {
		if *p, err = filepath.Abs(*p); err != nil {
			return config{}, err
		}
	}
	return cfg, nil
}

// parseHostnames reads "a.example,b.example" into localhost and those
// names, lower case and without repeats.
func parseHostnames(s string) ([]string, error) {
	names := []string{"localhost"}
	for _, name := range strings.Split(s, ",") {
		name = strings.ToLower(strings.TrimSpace(name))
		if name == "" || slices.Contains(names, name) {
			continue
		}
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			return nil, fmt.Errorf("--hostnames entry %q: %s", name, strings.Join(errs, "; "))
		}
		names = append(names, name)
	}
	return names, nil
}
