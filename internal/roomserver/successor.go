package roomserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"
)

// HeaderPod names the pod that answered on the game endpoint. A pod about
// to hand its players over asks the endpoint it sends them to
// (AwaitSuccessor) and goes ahead once another pod answers there.
const HeaderPod = "Roomkeeper-Pod"

// The successor's probe: how often, how long each try, and how long in
// all before the players are sent anyway (their clients try a transfer's
// destination for several seconds themselves). A map's own endpoint has
// left this pod once mapAnswersInARow answers in a row came from others:
// a gateway balancing between two pods alternates them.
const (
	successorProbeEvery   = 100 * time.Millisecond
	successorProbeTimeout = time.Second
	successorProbeLimit   = 5 * time.Second
	mapAnswersInARow      = 3
)

// AwaitSuccessor waits until a pod other than this one answers at
// endpoint, the successor's ws:// or wss:// URL that a handover sends the
// players to. A new pod is Ready before everything between the players
// and it routes to it: a Gateway's implementation applies a new backend a
// few seconds after the Service lists it (Traefik: at most every 2 s), and
// the route's Accepted condition says nothing of that. When players reach
// the map at an endpoint of its own, mapEndpoint (a Gateway's path for the
// map, routed to whichever of its pods is Ready), it then waits until
// that one leads to other pods only: this pod stopped being Ready when it
// was deleted, and the gateway follows as late. A player who joins
// meanwhile comes here and is handed over with the others, where once
// the handover began this pod would refuse it. Meanwhile this pod serves
// its players, where they would otherwise wait. It returns nil once both
// lead elsewhere, and an error when they did not within
// successorProbeLimit or ctx, or cannot be asked from here (a name that
// does not resolve inside the cluster): the players are sent then anyway.
func (s *Server) AwaitSuccessor(ctx context.Context, endpoint, mapEndpoint string) error {
	ctx, cancel := context.WithTimeout(ctx, successorProbeLimit)
	defer cancel()
	if err := s.awaitOthersAt(ctx, endpoint, 1); err != nil {
		return err
	}
	if mapEndpoint == "" || mapEndpoint == endpoint {
		return nil
	}
	return s.awaitOthersAt(ctx, mapEndpoint, mapAnswersInARow)
}

// awaitOthersAt asks endpoint every successorProbeEvery until inARow
// answers in a row come from pods other than this one.
func (s *Server) awaitOthersAt(ctx context.Context, endpoint string, inARow int) error {
	probe, err := successorProbe(endpoint)
	if err != nil {
		return err
	}
	client := &http.Client{Timeout: successorProbeTimeout, Transport: &http.Transport{
		// The probe asks where the route leads, not who the server is:
		// the players' clients check its certificate.
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // see above
		DisableKeepAlives: true,
	}}
	tick := time.NewTicker(successorProbeEvery)
	defer tick.Stop()
	for others := 0; ; {
		pod, err := s.askEndpoint(ctx, client, probe)
		switch {
		case err == nil && pod != "" && pod != s.cfg.Pod:
			if others++; others == inARow {
				return nil
			}
		case isUnresolvable(err):
			return fmt.Errorf("%s cannot be asked from here: %w", endpoint, err)
		default:
			others = 0
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not lead to other pods only (last answer from pod %q): %w", endpoint, pod, errors.Join(ctx.Err(), err))
		case <-tick.C:
		}
	}
}

// askEndpoint sends one plain GET to the game endpoint and returns the
// pod that answered ("" when something else did: a gateway without the
// route yet answers 404 or 503 itself).
func (s *Server) askEndpoint(ctx context.Context, client *http.Client, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	_ = resp.Body.Close()
	return resp.Header.Get(HeaderPod), nil
}

// successorProbe is endpoint's http(s) URL.
func successorProbe(endpoint string) (string, error) {
	switch {
	case strings.HasPrefix(endpoint, "ws://"):
		return "http://" + strings.TrimPrefix(endpoint, "ws://"), nil
	case strings.HasPrefix(endpoint, "wss://"):
		return "https://" + strings.TrimPrefix(endpoint, "wss://"), nil
	}
	return "", fmt.Errorf("the successor's endpoint %q is not a ws:// or wss:// URL", endpoint)
}

// isUnresolvable reports whether err says the endpoint's host name is
// unknown here: asking again will not help.
func isUnresolvable(err error) bool {
	var dns *net.DNSError
	return errors.As(err, &dns) && dns.IsNotFound
}
