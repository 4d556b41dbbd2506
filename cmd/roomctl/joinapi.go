package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// joinAPITimeout bounds one call to the join API.
const joinAPITimeout = 15 * time.Second

// joinAPIFlags say which join API and room to ask, instead of minting
// tickets locally.
type joinAPIFlags struct {
	url, namespace, mapName, party string
	// tls trusts --ca-file besides the system's roots, for an https join
	// API and wss:// endpoints (make dev's gateway); nil: the system's.
	tls *tls.Config
}

func (j *joinAPIFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&j.url, "join-api", "", "the manager's join API (it gives endpoint and ticket); the default, without --endpoint or --key-dir, is $ROOMKEEPER_JOIN_API or http://127.0.0.1:8090")
	fs.StringVar(&j.namespace, "namespace", "default", "the GameRoom's namespace, with --join-api")
	fs.StringVar(&j.party, "party", "", "party id, with --join-api: players of one party share instanced maps (bots: {bot} in it is the bot's number)")
	fs.Func("ca-file", "PEM CA certificate(s) to trust besides the system's, for an https:// join API and wss:// endpoints (make dev's gateway: .dev/gateway/ca.crt)", func(path string) error {
		cfg, err := trustCAFile(path)
		j.tls = cfg
		return err
	})
}

// trustCAFile is a TLS config that trusts the system's roots and the
// certificates in path.
func trustCAFile(path string) (*tls.Config, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	roots, err := x509.SystemCertPool()
	if err != nil {
		roots = x509.NewCertPool()
	}
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}, nil
}

// clientOptions are the WebSocket client's options with the trusted CAs.
func (j *joinAPIFlags) clientOptions(codec string) client.Options {
	return client.Options{Codec: codec, TLSConfig: j.tls}
}

// defaultJoinAPI is where `make dev` serves the join API; ROOMKEEPER_JOIN_API
// overrides it.
func defaultJoinAPI() string {
	if url := os.Getenv("ROOMKEEPER_JOIN_API"); url != "" {
		return url
	}
	return "http://127.0.0.1:8090"
}

// useDefault picks the default join API when nothing says where tickets
// come from, so `roomctl join --room demo` works against `make dev`.
func (j *joinAPIFlags) useDefault(t *ticketFlags, endpoint string) {
	if j.url == "" && endpoint == "" && (t == nil || (t.ticket == "" && t.keyDir == "")) {
		j.url = defaultJoinAPI()
	}
}

// registerMap adds --map, for the commands that join.
func (j *joinAPIFlags) registerMap(fs *flag.FlagSet) {
	fs.StringVar(&j.mapName, "map", "", "the map to join, with --join-api (default: the room's defaultMap)")
}

// api is the join API client.
func (j *joinAPIFlags) api() *client.JoinAPI {
	hc := &http.Client{Timeout: joinAPITimeout}
	if j.tls != nil {
		hc.Transport = &http.Transport{TLSClientConfig: j.tls, Proxy: http.ProxyFromEnvironment}
	}
	return &client.JoinAPI{BaseURL: j.url, HTTPClient: hc}
}

// checkExclusive refuses a mix of the join API and local tickets, which
// would leave unclear where the ticket comes from.
func (j *joinAPIFlags) checkExclusive(t *ticketFlags, endpoint string) error {
	switch {
	case endpoint != "" || t.ticket != "" || t.keyDir != "":
		return errors.New("--join-api gives the endpoint and ticket: drop --endpoint, --ticket and --key-dir")
	case t.room == "":
		return errors.New("--join-api needs --room")
	}
	return nil
}

// join asks the join API for a seat in room, waiting out rate limits
// (many bots share one address) until ctx ends.
func (j *joinAPIFlags) join(ctx context.Context, room, authKey, character string) (client.JoinResponse, error) {
	req := client.JoinRequest{AuthKey: authKey, CharacterID: character, Map: j.mapName, Party: j.party}
	return patiently(ctx, func() (client.JoinResponse, error) { return j.api().Join(ctx, j.namespace, room, req) })
}

// patiently calls the join API until it answers other than rate_limited
// (many bots share one address), waiting as each answer says, or until
// ctx ends.
func patiently[T any](ctx context.Context, call func() (T, error)) (T, error) {
	for {
		resp, err := call()
		var apiErr *client.APIError
		if !errors.As(err, &apiErr) || apiErr.Code != "rate_limited" {
			return resp, err
		}
		wait, _ := client.RetryAfter(err)
		select {
		case <-ctx.Done():
			return resp, err
		case <-time.After(wait):
		}
	}
}
