package joinapi

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// corsMaxAge is how long a browser may reuse a preflight answer.
const corsMaxAge = 10 * time.Minute

// playerPrefix is the part of the API browsers call: joins, characters,
// content, parties and a namespace's lobby; lobbyPath the lobby of every
// namespace, partiesPath a party's creation naming its room in the body.
// The internal route (/v1/internal/, map pods only) never answers a
// browser's cross-origin request.
const (
	playerPrefix = "/v1/namespaces/"
	lobbyPath    = "/v1/gamerooms"
	partiesPath  = "/v1/parties"
)

// playerRoute reports whether a path is one browsers may call.
func playerRoute(path string) bool {
	return strings.HasPrefix(path, playerPrefix) || path == lobbyPath || path == partiesPath
}

// withCORS lets pages of the allowed origins call the player routes from
// a browser: it answers their preflight requests and marks their answers
// readable. allowed lists origins ("https://play.example.com") or holds
// "*" for any. Requests from other origins are served as before without
// the headers, so a browser keeps their answers from the page.
func withCORS(next http.Handler, allowed []string) http.Handler {
	if len(allowed) == 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" || !playerRoute(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Add("Vary", "Origin")
		ok := originAllowed(origin, allowed)
		if ok {
			w.Header().Set("Access-Control-Allow-Origin", origin)
			w.Header().Set("Access-Control-Expose-Headers", "ETag") // the content definitions' (content.go)
		}
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			if ok {
				w.Header().Set("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS")
				w.Header().Set("Access-Control-Allow-Headers", "Content-Type, Authorization, If-None-Match")
				w.Header().Set("Access-Control-Max-Age", strconv.Itoa(int(corsMaxAge.Seconds())))
			}
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func originAllowed(origin string, allowed []string) bool {
	return slices.Contains(allowed, "*") || slices.Contains(allowed, origin)
}
