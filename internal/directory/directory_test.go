package directory

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/token"
)

// fakeAPI answers destination requests the way the join API does, and
// remembers what it was asked. internal/joinapi tests the client against
// the real handler.
type fakeAPI struct {
	t         *testing.T
	keys      token.KeySet
	answer    func(w http.ResponseWriter, claims token.Claims)
	path      string
	body      map[string]string
	claims    token.Claims
	verifyErr error
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.path = r.Method + " " + r.URL.Path
	f.body = map[string]string{}
	if err := json.NewDecoder(r.Body).Decode(&f.body); err != nil {
		f.t.Errorf("body: %v", err)
	}
	raw, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	f.claims, f.verifyErr = token.NewVerifier(token.StaticKeys(f.keys), nil).Verify(raw,
		token.Expect{Room: "demo", Map: f.body["map"], Types: []string{token.TypeDestination}})
	f.answer(w, f.claims)
}

func newKeys(t *testing.T) token.KeySet {
	t.Helper()
	keys, err := token.Rotate(token.KeySet{})
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

func TestResolveSignsAFreshTokenPerCall(t *testing.T) {
	keys := newKeys(t)
	api := &fakeAPI{t: t, keys: keys, answer: func(w http.ResponseWriter, c token.Claims) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(Destination{Map: "crypt", Instance: "demo-crypt-a1b2c", Endpoint: "ws://10.0.0.9:7350/ws"})
	}}
	srv := httptest.NewServer(api)
	defer srv.Close()
	c := New(srv.URL+"/", "games", "demo", "demo-town", token.StaticKeys(keys), srv.Client())

	d, err := c.Resolve(context.Background(), "crypt", Player{Party: "p-7", User: "u-1", Character: "c-1", Address: "203.0.113.7"})
	if err != nil {
		t.Fatal(err)
	}
	if d != (Destination{Map: "crypt", Instance: "demo-crypt-a1b2c", Endpoint: "ws://10.0.0.9:7350/ws"}) {
		t.Fatalf("destination %+v", d)
	}
	if api.path != "POST /v1/internal/namespaces/games/gamerooms/demo/destinations" {
		t.Fatalf("asked %s", api.path)
	}
	if api.body["map"] != "crypt" || api.body["party"] != "p-7" || len(api.body) != 2 {
		t.Fatalf("body %v, want map crypt and party p-7", api.body)
	}
	if api.verifyErr != nil {
		t.Fatalf("the token does not verify with the room's keys: %v", api.verifyErr)
	}
	c1 := api.claims
	if c1.Type != token.TypeDestination || c1.Subject != "u-1" || c1.Character != "c-1" || c1.Room != "demo" ||
		c1.Map != "crypt" || c1.From != "demo-town" || c1.Party != "p-7" || c1.Transfer != "" {
		t.Fatalf("claims %+v", c1)
	}
	if c1.Address != AddressClaim("203.0.113.7") || strings.Contains(c1.Address, "203.0.113") {
		t.Fatalf("adr %q, want the address hashed", c1.Address)
	}
	if ttl := c1.ExpiresAt.Sub(c1.IssuedAt); ttl != tokenTTL {
		t.Fatalf("token ttl %v, want %v", ttl, tokenTTL)
	}

	if _, err := c.Resolve(context.Background(), "crypt", Player{User: "u-1", Character: "c-1"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := api.body["party"]; ok || api.claims.Party != "" || api.claims.Address != "" {
		t.Fatalf("no party, no address: body %v, pty %q, adr %q; want neither", api.body, api.claims.Party, api.claims.Address)
	}
	if api.claims.ID == c1.ID {
		t.Fatal("two calls sent the same token")
	}
}

func TestResolveErrors(t *testing.T) {
	keys := newKeys(t)
	cases := []struct {
		name   string
		answer func(w http.ResponseWriter)
		want   Error
	}{
		{"quarantined", func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "42")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"code":"map_quarantined","message":"map crypt crashed too often","retryAfter":42}`))
		}, Error{Code: CodeMapQuarantined, Message: "map crypt crashed too often", RetryAfter: 42}},
		{"retry-after only in the header", func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"code":"rate_limited","message":"too many"}`))
		}, Error{Code: CodeRateLimited, Message: "too many", RetryAfter: 1}},
		{"unauthorized", func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"code":"unauthorized","message":"the destination token expired"}`))
		}, Error{Code: CodeUnauthorized, Message: "the destination token expired"}},
		{"a proxy's page", func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte("<html>bad gateway</html>\n"))
		}, Error{Code: CodeInternal, Message: "HTTP 502: <html>bad gateway</html>"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(&fakeAPI{t: t, keys: keys, answer: func(w http.ResponseWriter, _ token.Claims) { tc.answer(w) }})
			defer srv.Close()
			_, err := New(srv.URL, "default", "demo", "demo-town", token.StaticKeys(keys), nil).
				Resolve(context.Background(), "crypt", Player{User: "u-1", Character: "c-1"})
			var e *Error
			if !errors.As(err, &e) || *e != tc.want {
				t.Fatalf("error %#v, want %#v", err, &tc.want)
			}
		})
	}
}

func TestResolveTransportErrorIsNotAnAnswer(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there now
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := New(url, "default", "demo", "demo-town", token.StaticKeys(newKeys(t)), nil).Resolve(ctx, "crypt", Player{User: "u-1", Character: "c-1"})
	var e *Error
	if err == nil || errors.As(err, &e) {
		t.Fatalf("error %v, want a transport error that is not an *Error", err)
	}
}

func TestResolveWithoutKeys(t *testing.T) {
	_, err := New("http://127.0.0.1:1", "default", "demo", "demo-town", token.StaticKeys{}, nil).
		Resolve(context.Background(), "crypt", Player{User: "u-1", Character: "c-1"})
	if err == nil {
		t.Fatal("signed without a key")
	}
}
