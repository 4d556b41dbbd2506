// Package joinflags is how the command-line tools (roomctl, roomload)
// reach the join API: the --join-api, --namespace, --party, --party-token,
// --map and --ca-file flags, the client they make, the parties they
// create, and joins that wait out the join API's rate limit (many bots
// share one address).
package joinflags

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/roomkeeper/roomkeeper/pkg/client"
)

// callTimeout bounds one call to the join API.
const callTimeout = 15 * time.Second

// Flags say which join API and room to ask.
type Flags struct {
	URL, Namespace, MapName string
	// Instance asks for one shard of the map (a friend's, as its welcome
	// names it); roomctl's --instance sets it.
	Instance string
	// Party names a party of this process's players: the first of them
	// to join creates it on the join API and leads it, the others join
	// by the leader's invitations (Parties). PartyToken joins a party
	// made elsewhere.
	Party, PartyToken string
	// TLS trusts --ca-file besides the system's roots, for an https join
	// API and wss:// endpoints (make dev's gateway); nil: the system's.
	TLS *tls.Config
	// Dial makes the TCP connections to the join API and the maps; nil:
	// the usual dialer (roomload's soak gives each player an address of
	// its own).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// parties are the parties this process created, shared by copies of
	// the Flags (one per bot).
	parties *Parties
}

// Register adds --join-api, --namespace, --party, --party-token and
// --ca-file to fs.
func (j *Flags) Register(fs *flag.FlagSet) {
	j.parties = &Parties{}
	fs.StringVar(&j.URL, "join-api", "", "the manager's join API (it gives endpoint and ticket); the default, without --endpoint or --key-dir, is $ROOMKEEPER_JOIN_API or http://127.0.0.1:8090")
	fs.StringVar(&j.Namespace, "namespace", "default", "the GameRoom's namespace, with --join-api")
	fs.StringVar(&j.Party, "party", "", "with --join-api, a name for a new party: the players of this command with one name share it, and its instanced maps (the first to join leads it; bots: {bot} in it is the bot's number)")
	fs.StringVar(&j.PartyToken, "party-token", "", "with --join-api, join the party of this party token (roomctl party create, or invite)")
	fs.Func("ca-file", "PEM CA certificate(s) to trust besides the system's, for an https:// join API and wss:// endpoints (make dev's gateway: .dev/gateway/ca.crt)", func(path string) error {
		cfg, err := trustCAFile(path)
		j.TLS = cfg
		return err
	})
}

// RegisterMap adds --map, for the commands that join.
func (j *Flags) RegisterMap(fs *flag.FlagSet) {
	fs.StringVar(&j.MapName, "map", "", "the map to join, with --join-api (default: the room's defaultMap)")
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

// ClientOptions are the WebSocket client's options with the trusted CAs.
func (j *Flags) ClientOptions(codec string) client.Options {
	return client.Options{Codec: codec, TLSConfig: j.TLS, NetDialContext: j.Dial}
}

// Default is where `make dev` serves the join API; ROOMKEEPER_JOIN_API
// overrides it.
func Default() string {
	if url := os.Getenv("ROOMKEEPER_JOIN_API"); url != "" {
		return url
	}
	return "http://127.0.0.1:8090"
}

// API is the join API client.
func (j *Flags) API() *client.JoinAPI {
	hc := &http.Client{Timeout: callTimeout}
	if j.TLS != nil || j.Dial != nil {
		hc.Transport = &http.Transport{TLSClientConfig: j.TLS, Proxy: http.ProxyFromEnvironment, DialContext: j.Dial}
	}
	return &client.JoinAPI{BaseURL: j.URL, HTTPClient: hc}
}

// Join asks the join API for a seat in room, in the Flags' party, waiting
// out rate limits until ctx ends.
func (j *Flags) Join(ctx context.Context, room, authKey, character string) (client.JoinResponse, error) {
	req := client.JoinRequest{AuthKey: authKey, CharacterID: character, Map: j.MapName, Instance: j.Instance, PartyToken: j.PartyToken}
	if req.PartyToken == "" && j.Party != "" {
		if j.parties == nil { // Flags made without Register
			j.parties = &Parties{}
		}
		p, err := j.parties.Token(ctx, j, room, j.Party, authKey)
		if err != nil {
			return client.JoinResponse{}, fmt.Errorf("party %s: %w", j.Party, err)
		}
		req.PartyToken = p.Token
	}
	return Patiently(ctx, func() (client.JoinResponse, error) { return j.API().Join(ctx, j.Namespace, room, req) })
}

// Parties are the parties one process creates, by the names its flags
// give them: the first player to join under a name creates the party and
// leads it; each later one gets an invitation from the leader's token.
type Parties struct {
	mu      sync.Mutex
	leaders map[string]client.Party
}

// Token is a party token of room's party called name for the player of
// authKey: the leader's when it creates the party, else a new member's.
func (p *Parties) Token(ctx context.Context, j *Flags, room, name, authKey string) (client.Party, error) {
	p.mu.Lock() // one creation per name; the calls take milliseconds
	defer p.mu.Unlock()
	key := j.Namespace + "/" + room + "/" + name
	if leader, ok := p.leaders[key]; ok {
		return Patiently(ctx, func() (client.Party, error) { return j.API().Invite(ctx, j.Namespace, room, leader) })
	}
	leader, err := Patiently(ctx, func() (client.Party, error) { return j.API().CreateParty(ctx, j.Namespace, room, authKey) })
	if err != nil {
		return client.Party{}, err
	}
	if p.leaders == nil {
		p.leaders = map[string]client.Party{}
	}
	p.leaders[key] = leader
	return leader, nil
}

// Patiently calls the join API until it answers other than rate_limited
// or a persistence_unavailable worth retrying, waiting as each answer
// says, or until ctx ends. A quarantined map is answered at once: its
// wait is minutes, the caller's to decide.
func Patiently[T any](ctx context.Context, call func() (T, error)) (T, error) {
	for {
		resp, err := call()
		var apiErr *client.APIError
		wait, retry := client.RetryAfter(err)
		if !retry || (errors.As(err, &apiErr) && apiErr.Code == "map_quarantined") {
			return resp, err
		}
		select {
		case <-ctx.Done():
			return resp, err
		case <-time.After(wait):
		}
	}
}
