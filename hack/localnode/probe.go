package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Probe defaults, as in the Pod API.
const (
	defaultProbePeriod    = 10 * time.Second
	defaultProbeTimeout   = 1 * time.Second
	defaultProbeThreshold = 3
)

// readiness tracks a container's readiness probe. Only HTTP GET and TCP
// probes are run; a container without one (or with an exec or gRPC probe)
// is ready once it runs.
type readiness struct {
	probe     *corev1.Probe
	container corev1.Container
	podIP     string
	failures  int32
}

// period is how often the probe runs.
func (r *readiness) period() time.Duration {
	if r.probe == nil || r.probe.PeriodSeconds <= 0 {
		return defaultProbePeriod
	}
	return time.Duration(r.probe.PeriodSeconds) * time.Second
}

// initialDelay is when the first probe runs after the start.
func (r *readiness) initialDelay() time.Duration {
	if r.probe == nil {
		return 0
	}
	return time.Duration(max(r.probe.InitialDelaySeconds, 0)) * time.Second
}

// check runs the probe once and returns whether the container is ready,
// given it was ready before.
func (r *readiness) check(ctx context.Context, wasReady bool) bool {
	if r.probe == nil || (r.probe.HTTPGet == nil && r.probe.TCPSocket == nil) {
		return true
	}
	if err := r.run(ctx); err != nil {
		r.failures++
		threshold := r.probe.FailureThreshold
		if threshold <= 0 {
			threshold = defaultProbeThreshold
		}
		return wasReady && r.failures < threshold
	}
	r.failures = 0
	return true
}

// run performs one probe and returns why it failed.
func (r *readiness) run(ctx context.Context) error {
	timeout := defaultProbeTimeout
	if r.probe.TimeoutSeconds > 0 {
		timeout = time.Duration(r.probe.TimeoutSeconds) * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if tcp := r.probe.TCPSocket; tcp != nil {
		port, err := resolvePort(tcp.Port, r.container)
		if err != nil {
			return err
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(hostOr(tcp.Host, r.podIP), strconv.Itoa(port)))
		if err != nil {
			return err
		}
		return conn.Close()
	}
	return httpGet(ctx, r.probe.HTTPGet, r.container, r.podIP)
}

// httpGet succeeds on a 2xx or 3xx answer, as the kubelet's prober.
func httpGet(ctx context.Context, get *corev1.HTTPGetAction, c corev1.Container, podIP string) error {
	url, err := probeURL(get, c, podIP)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return err
	}
	for _, h := range get.HTTPHeaders {
		req.Header.Add(h.Name, h.Value)
	}
	client := &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // as the kubelet's HTTPS probes
		DisableKeepAlives: true,
	}, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 10<<10))
	if resp.StatusCode < 200 || resp.StatusCode >= 400 {
		return fmt.Errorf("probe %s: HTTP %d", url, resp.StatusCode)
	}
	return nil
}

// probeURL is the address an HTTP probe fetches.
func probeURL(get *corev1.HTTPGetAction, c corev1.Container, podIP string) (string, error) {
	port, err := resolvePort(get.Port, c)
	if err != nil {
		return "", err
	}
	scheme := "http"
	if get.Scheme == corev1.URISchemeHTTPS {
		scheme = "https"
	}
	path := get.Path
	if path == "" || path[0] != '/' {
		path = "/" + path
	}
	return scheme + "://" + net.JoinHostPort(hostOr(get.Host, podIP), strconv.Itoa(port)) + path, nil
}

// resolvePort turns a probe port, number or container port name, into a number.
func resolvePort(port intstr.IntOrString, c corev1.Container) (int, error) {
	if port.Type == intstr.Int {
		if port.IntVal <= 0 || port.IntVal > 65535 {
			return 0, fmt.Errorf("probe port %d out of range", port.IntVal)
		}
		return int(port.IntVal), nil
	}
	for _, p := range c.Ports {
		if p.Name == port.StrVal {
			return int(p.ContainerPort), nil
		}
	}
	return 0, fmt.Errorf("probe port %q is not a port of container %s", port.StrVal, c.Name)
}

func hostOr(host, podIP string) string {
	if host != "" {
		return host
	}
	return podIP
}
