package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/testenv"
)

// get fetches url and returns its status and body.
func get(t *testing.T, ctx context.Context, url string) (int, string) {
	t.Helper()
	return testenv.Get(t, ctx, nil, url)
}

// TestPprofOnlyOnTheHealthListenerWhenAsked: without --pprof no profile is
// served anywhere; with it the profiles are on the health listener, next to
// /healthz, and still not on the game listener players reach.
func TestPprofOnlyOnTheHealthListenerWhenAsked(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const mapConfig = `{"seed":1,"width":64,"height":64}`

	off := f.start(mapConfig)
	if code, _ := get(t, ctx, "http://"+off.http+pprofPath); code != http.StatusNotFound {
		t.Errorf("without --pprof, GET %s on the health listener = %d, want 404", pprofPath, code)
	}

	on := f.start(mapConfig, "--pprof")
	if code, body := get(t, ctx, "http://"+on.http+pprofPath); code != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Errorf("with --pprof, GET %s on the health listener = %d, want 200 and the profile index:\n%.200s", pprofPath, code, body)
	}
	for _, path := range []string{pprofPath + "goroutine?debug=1", pprofPath + "cmdline", "/healthz", "/metrics"} {
		if code, _ := get(t, ctx, "http://"+on.http+path); code != http.StatusOK {
			t.Errorf("with --pprof, GET %s on the health listener = %d, want 200", path, code)
		}
	}
	for _, path := range []string{pprofPath, pprofPath + "cmdline"} {
		if code, body := get(t, ctx, "http://"+on.game+path); code == http.StatusOK || strings.Contains(body, "goroutine") {
			t.Errorf("with --pprof, GET %s on the game listener = %d, want no profile there", path, code)
		}
	}
}

func TestPprofIsOffByDefault(t *testing.T) {
	o, err := parseFlags([]string{"--key-dir=/keys"}, envOf(map[string]string{"ROOMKEEPER_MAP_CONFIG": "{}"}))
	if err != nil {
		t.Fatal(err)
	}
	if o.pprof {
		t.Error("pprof is on without --pprof")
	}
}

// envOf is a getenv over vars.
func envOf(vars map[string]string) func(string) string {
	return func(name string) string { return vars[name] }
}
