// Package web holds the browser client: the TypeScript SDK (src/), the
// demo page (demo/) and the map generator compiled to WebAssembly
// (mapgen/). `make web` builds them into dist/, which this package embeds,
// so the manager serves the page from its own binary (Handler).
package web

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

//go:embed all:dist
var dist embed.FS

// Path is where the manager serves the page, on the join API's address:
// the page then calls the join API from its own origin.
const Path = "/play/"

// Built reports whether `make web` put the client into this build. A
// manager built with plain `go build` before it has none, and Handler
// says so instead of serving an empty directory.
func Built() bool {
	return built(files())
}

func built(files fs.FS) bool {
	_, err := fs.Stat(files, "index.html")
	return err == nil
}

// files is dist/ as the root of the client's files.
func files() fs.FS {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err) // the embed pattern names dist: it is always there
	}
	return sub
}

// contentSecurityPolicy lets the page run only its own scripts and
// WebAssembly, and talk to the join API (same origin) and to any map's
// WebSocket endpoint, which is on another host.
const contentSecurityPolicy = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; " +
	"connect-src 'self' ws: wss:; img-src 'self' data:; style-src 'self'; base-uri 'none'; " +
	"form-action 'none'; frame-ancestors 'none'"

// Handler serves the client under prefix (such as Path).
func Handler(prefix string) http.Handler {
	return serve(files(), prefix)
}

// serve serves files under prefix with the page's security headers.
func serve(files fs.FS, prefix string) http.Handler {
	static := http.StripPrefix(prefix, http.FileServerFS(files))
	ready := built(files)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		if !ready {
			http.Error(w, "this build has no web client: run `make web` before building the manager (make build does)",
				http.StatusServiceUnavailable)
			return
		}
		if strings.HasSuffix(r.URL.Path, "/") || strings.HasSuffix(r.URL.Path, ".html") {
			h.Set("Cache-Control", "no-cache") // the page names the current bundle
		}
		static.ServeHTTP(w, r)
	})
}
