package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/joinflags"
)

// TestEachSoakPlayerComesFromItsOwnAddress: a thousand players have a
// thousand loopback addresses, and the join API sees a player's calls
// come from its own.
func TestEachSoakPlayerComesFromItsOwnAddress(t *testing.T) {
	seen := map[string]int{}
	for i := range 1000 {
		ip := playerAddress(i)
		if !ip.IsLoopback() {
			t.Fatalf("player %d: %s is not a loopback address", i, ip)
		}
		if j, ok := seen[ip.String()]; ok {
			t.Fatalf("players %d and %d share %s", j, i, ip)
		}
		seen[ip.String()] = i
	}

	from := make(chan string, 1)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		from <- host
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"characters": []}`))
	}))
	defer api.Close()
	flags := playerFlags(joinflags.Flags{URL: api.URL}, playerAddress(260))
	player := flags.API()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := player.Characters(ctx, "default", "soak-0", "key"); err != nil {
		t.Fatalf("listing the characters: %v", err)
	}
	if got, want := <-from, "127.1.1.11"; got != want {
		t.Errorf("the join API saw the player at %s, want %s", got, want)
	}
}
