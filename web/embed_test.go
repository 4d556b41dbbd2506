package web

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
)

// answer is what a test reads of a response.
type answer struct {
	StatusCode int
	Header     http.Header
	Body       string
}

// get requests path from h.
func get(t *testing.T, h http.Handler, method, path string) answer {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	resp := rec.Result()
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{resp.StatusCode, resp.Header, string(body)}
}

// TestEmbeddedClient checks the client `make web` built into this package:
// the page, its script, the map generator and the Go runtime glue, each
// with the type a browser needs (WebAssembly.instantiateStreaming insists
// on application/wasm) and the page's security headers.
func TestEmbeddedClient(t *testing.T) {
	if !Built() {
		t.Fatal("web/dist has no index.html: run `make web` (make build and make test do)")
	}
	h := Handler(Path)
	for path, wantType := range map[string]string{
		Path:                   "text/html",
		Path + "app.js":        "text/javascript",
		Path + "mapgen.wasm":   "application/wasm",
		Path + "wasm_exec.js":  "text/javascript",
		Path + "bench.html":    "text/html",
		Path + "style.css":     "text/css",
		Path + "index.html":    "", // FileServer redirects index.html to the directory
		Path + "no-such-thing": "",
	} {
		resp := get(t, h, http.MethodGet, path)
		switch {
		case wantType == "" && resp.StatusCode/100 == 2:
			t.Errorf("%s: %d, want a redirect or 404", path, resp.StatusCode)
		case wantType != "" && resp.StatusCode != http.StatusOK:
			t.Errorf("%s: %d, want 200", path, resp.StatusCode)
		case wantType != "" && !strings.HasPrefix(resp.Header.Get("Content-Type"), wantType):
			t.Errorf("%s: Content-Type %q, want %s", path, resp.Header.Get("Content-Type"), wantType)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
			t.Errorf("%s: Content-Security-Policy %q", path, csp)
		}
	}
}

func TestHandlerRefusesWrites(t *testing.T) {
	resp := get(t, serve(fstest.MapFS{"index.html": {Data: []byte("<html>")}}, Path), http.MethodPost, Path)
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", resp.StatusCode)
	}
}

// A manager built without `make web` says how to get the page.
func TestHandlerWithoutClient(t *testing.T) {
	resp := get(t, serve(fstest.MapFS{".gitignore": {Data: []byte("*")}}, Path), http.MethodGet, Path)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(resp.Body, "make web") {
		t.Errorf("without a client: %d %q, want 503 naming make web", resp.StatusCode, resp.Body)
	}
}
