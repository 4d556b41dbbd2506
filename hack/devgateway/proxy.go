package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"strings"
)

// ServeHTTP routes a request by the current table and proxies it, WebSocket
// upgrades included, to a ready endpoint of the matched rule's backends.
func (g *gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	table := g.table.Load()
	if table == nil {
		http.Error(w, "devgateway: starting, routes not loaded yet", http.StatusServiceUnavailable)
		return
	}
	host := requestHost(r.Host)
	e := table.lookup(host, r.URL.Path)
	if e == nil {
		g.log.Info("No route", "host", host, "path", r.URL.Path)
		http.Error(w, fmt.Sprintf("devgateway: no route for host %q path %q", host, r.URL.Path), http.StatusNotFound)
		return
	}
	addr, why := e.pick()
	if addr == "" {
		g.log.Info("No ready endpoint", "route", e.route.String(), "path", r.URL.Path, "reason", why)
		http.Error(w, "devgateway: "+why, http.StatusServiceUnavailable)
		return
	}
	path, upstreamHost := e.rewritePath(r.URL.Path), e.rewriteHost(r.Host)
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = "http", addr
			pr.Out.URL.Path, pr.Out.URL.RawPath = path, ""
			pr.Out.Host = upstreamHost // as Envoy does: the backend sees the public host
			pr.SetXForwarded()
		},
		Transport: g.transport,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() == nil { // else the client went away: nothing to report
				g.log.Error(err, "Proxying failed", "route", e.route.String(), "endpoint", addr)
			}
			http.Error(w, "devgateway: proxying to "+addr+" failed", http.StatusBadGateway)
		},
	}
	proxy.ServeHTTP(w, r)
}

// requestHost is the host a Host header names: lower case, without port,
// IPv6 brackets or a trailing dot.
func requestHost(hostport string) string {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	return strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
}
