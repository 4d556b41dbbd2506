package joinapi

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"

	"github.com/roomkeeper/roomkeeper/internal/testenv"
)

// writeCert writes a self-signed certificate for 127.0.0.1 with the given
// common name to certFile and keyFile, stamped with modTime.
func writeCert(t *testing.T, certFile, keyFile, name string, modTime time.Time) *x509.Certificate {
	t.Helper()
	certPEM, keyPEM, err := testenv.SelfSignedPEM(name, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	for path, content := range map[string][]byte{certFile: certPEM, keyFile: keyPEM} {
		if err := os.WriteFile(path, content, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, modTime, modTime); err != nil {
			t.Fatal(err)
		}
	}
	block, _ := pem.Decode(certPEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// TestTheJoinAPIServesBrowsersOverTLS: with a certificate and allowed
// origins the join API answers over HTTPS only, answers the preflight of
// an allowed page and marks its answers readable, gives nothing to other
// origins or to the internal route, and picks up a rotated certificate
// without a restart.
func TestTheJoinAPIServesBrowsersOverTLS(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	first := writeCert(t, certFile, keyFile, "first", time.Now().Add(-time.Minute))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &Server{Handler: NewHandler(Options{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Writer: mgr.GetClient(),
		Log: e.log.logger(), Clock: clock, Limits: generous}), Log: e.log.logger(),
		TLSCertFile: certFile, TLSKeyFile: keyFile, AllowedOrigins: []string{"https://play.example.com"},
		Pages: map[string]http.Handler{"/play/": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "the page at "+r.URL.Path)
		})}}
	ctx, cancel := context.WithCancel(e.ctx)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("the join API stopped with %v", err)
		}
	})
	base := "https://" + ln.Addr().String()
	roots := x509.NewCertPool()
	roots.AddCert(first)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}

	join := base + e.roomPath("nope") + "/join"
	resp := do(t, client, http.MethodPost, join, "https://play.example.com", "")
	if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Access-Control-Allow-Origin") != "https://play.example.com" {
		t.Errorf("a join from an allowed page: %d, Allow-Origin %q; want 404 and the origin", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}
	for _, lobby := range []string{base + "/v1/gamerooms", base + "/v1/namespaces/" + e.ns + "/gamerooms"} {
		if r := do(t, client, http.MethodGet, lobby, "https://play.example.com", ""); r.StatusCode != http.StatusOK ||
			r.Header.Get("Access-Control-Allow-Origin") != "https://play.example.com" {
			t.Errorf("the lobby %s from an allowed page: %d, Allow-Origin %q", lobby, r.StatusCode, r.Header.Get("Access-Control-Allow-Origin"))
		}
	}
	if exposed := resp.Header.Get("Access-Control-Expose-Headers"); exposed != "ETag" {
		t.Errorf("an allowed page may read %q, want the content definitions' ETag", exposed)
	}
	if plain, err := http.Post("http://"+ln.Addr().String()+e.roomPath("nope")+"/join", "application/json", nil); err == nil {
		if plain.StatusCode < 400 {
			t.Errorf("plain HTTP on the TLS port answered %d", plain.StatusCode)
		}
		plain.Body.Close()
	}

	if page := get(t, client, base+"/play/app.js"); page != "the page at /play/app.js" {
		t.Errorf("the page beside the API: %q", page)
	}
	if other := get(t, client, base+"/playground"); !strings.Contains(other, `"code":"not_found"`) {
		t.Errorf("a path next to the page's: %q, want the API's not_found", other)
	}

	pre := do(t, client, http.MethodOptions, join, "https://play.example.com", http.MethodPost)
	if pre.StatusCode != http.StatusNoContent || pre.Header.Get("Access-Control-Allow-Origin") != "https://play.example.com" ||
		!strings.Contains(pre.Header.Get("Access-Control-Allow-Methods"), "POST") ||
		!strings.Contains(pre.Header.Get("Access-Control-Allow-Headers"), "Content-Type") ||
		!strings.Contains(pre.Header.Get("Access-Control-Allow-Headers"), "If-None-Match") {
		t.Errorf("preflight from an allowed page: %d %v", pre.StatusCode, pre.Header)
	}
	for name, r := range map[string]corsAnswer{
		"preflight from another origin": do(t, client, http.MethodOptions, join, "https://evil.example", http.MethodPost),
		"join from another origin":      do(t, client, http.MethodPost, join, "https://evil.example", ""),
		"internal route":                do(t, client, http.MethodPost, base+"/v1/internal/namespaces/"+e.ns+"/gamerooms/nope/destinations", "https://play.example.com", ""),
	} {
		if got := r.Header.Get("Access-Control-Allow-Origin"); got != "" {
			t.Errorf("%s: Access-Control-Allow-Origin %q, want none", name, got)
		}
	}

	second := writeCert(t, certFile, keyFile, "second", time.Now().Add(time.Minute))
	roots.AddCert(second)
	e.poll(func() reply {
		conn, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: roots})
		if err != nil {
			return reply{}
		}
		defer conn.Close()
		served := http.Header{}
		served.Set("Common-Name", conn.ConnectionState().PeerCertificates[0].Subject.CommonName)
		return reply{header: served}
	}, func(r reply) bool { return r.header.Get("Common-Name") == "second" })
}

// get returns the body of a GET of url.
func get(t *testing.T, client *http.Client, url string) string {
	t.Helper()
	_, body := testenv.Get(t, context.Background(), client, url)
	return body
}

// corsAnswer is what a test reads of a response.
type corsAnswer struct {
	StatusCode int
	Header     http.Header
}

// do sends one request with an Origin (and a preflight's requested method).
func do(t *testing.T, c *http.Client, method, url, origin, preflightFor string) corsAnswer {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Origin", origin)
	if preflightFor != "" {
		req.Header.Set("Access-Control-Request-Method", preflightFor)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	resp.Body.Close()
	return corsAnswer{StatusCode: resp.StatusCode, Header: resp.Header}
}

// TestABadCertificateIsReadOnceAndLoggedOnce: a rotated pair that does
// not load leaves the previous one served; it is not read again on every
// handshake, nor logged again, until the files change; a good pair then
// loads.
func TestABadCertificateIsReadOnceAndLoggedOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	writeCert(t, certFile, keyFile, "first", time.Now().Add(-time.Hour))
	logged := 0
	r, err := newCertReloader(certFile, keyFile, funcr.New(func(string, string) { logged++ }, funcr.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	bad := time.Now().Add(-time.Minute)
	if err := os.WriteFile(certFile, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(certFile, bad, bad); err != nil {
		t.Fatal(err)
	}
	for range 100 { // a hundred handshakes
		cert, err := r.certificate()
		if err != nil || commonName(t, cert) != "first" {
			t.Fatalf("with a bad new pair: %v, want the first one served", err)
		}
	}
	if logged != 1 {
		t.Fatalf("the bad pair was logged %d times, want once", logged)
	}
	writeCert(t, certFile, keyFile, "second", time.Now())
	cert, err := r.certificate()
	if err != nil || commonName(t, cert) != "second" {
		t.Fatalf("after a good pair was written: %v, want it served", err)
	}
}

func commonName(t *testing.T, cert *tls.Certificate) string {
	t.Helper()
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return leaf.Subject.CommonName
}
