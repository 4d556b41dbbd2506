package joinapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"testing"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/content"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/wait"
	pkgclient "github.com/roomkeeper/roomkeeper/pkg/client"
)

// getContent asks for a room's content definitions in namespace ns, with
// If-None-Match when etag is set.
func (e *env) getContent(ns, room, etag string) reply {
	e.t.Helper()
	header := http.Header{}
	if etag != "" {
		header.Set("If-None-Match", etag)
	}
	return e.doWith(http.MethodGet, "/v1/namespaces/"+ns+"/gamerooms/"+room+"/content", header)
}

// TestARoomsContentDefinitions: a client gets the definitions of every
// pack the room's maps play, named by map, with the hash each map's
// welcome carries; asking again with the ETag is answered 304 without a
// body; an unknown room, or a room of another namespace, is 404.
func TestARoomsContentDefinitions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	want(t, "no room", e.getContent(e.ns, "demo", ""), http.StatusNotFound, CodeRoomNotFound)
	e.createRoom("demo", func(r *gamev1.GameRoom) {
		r.Spec.Maps = append(r.Spec.Maps, gamev1.GameMap{Name: "crypt", Instanced: true,
			Config: gamev1.MapConfig{Width: 64, Height: 64, Biome: "dungeon"}})
	})
	got := e.eventually(http.StatusOK, "", func() reply { return e.getContent(e.ns, "demo", "") })
	var defs protocol.RoomContent
	if err := json.Unmarshal(got.body, &defs); err != nil {
		t.Fatalf("content %s: %v", got, err)
	}
	if defs.Maps["town"] != "wilds" || defs.Maps["crypt"] != "crypt" || len(defs.Packs) != 2 {
		t.Fatalf("maps %v, packs %d: want the town's wilds and the crypt's crypt", defs.Maps, len(defs.Packs))
	}
	crypt, _ := content.Named("crypt")
	if h := crypt.Definitions().Hash(); defs.Packs["crypt"].Hash() != h || defs.Hashes["crypt"] != h {
		t.Error("the crypt's definitions are not the hash its welcome carries")
	}
	etag := got.header.Get("ETag")
	if etag != `"`+defs.Hash+`"` || got.header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("ETag %q, Cache-Control %q: want the hash, and revalidation", etag, got.header.Get("Cache-Control"))
	}
	if again := e.getContent(e.ns, "demo", etag); again.status != http.StatusNotModified || len(again.body) != 0 {
		t.Errorf("with its ETag: %s, want 304 and no body", again)
	}
	if stale := e.getContent(e.ns, "demo", `"an-older-hash"`); stale.status != http.StatusOK {
		t.Errorf("with another ETag: %s, want 200", stale)
	}
	other := newEnv(t)
	want(t, "the room from another namespace", other.getContent(other.ns, "demo", ""), http.StatusNotFound, CodeRoomNotFound)
}

// statusRecorder records the statuses of the answers its client gets.
type statusRecorder struct {
	next     http.RoundTripper
	mu       sync.Mutex
	statuses []int
}

func (s *statusRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := s.next.RoundTrip(req)
	if err == nil {
		s.mu.Lock()
		s.statuses = append(s.statuses, resp.StatusCode)
		s.mu.Unlock()
	}
	return resp, err
}

// TestTheGoClientKeepsTheDefinitions: pkg/client's ContentCache asks once
// for the body and afterwards only revalidates (304), and finds a map's
// pack by the hash its welcome carries.
func TestTheGoClientKeepsTheDefinitions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createRoom("demo")
	recorder := &statusRecorder{next: e.srv.Client().Transport}
	cache := &pkgclient.ContentCache{API: &pkgclient.JoinAPI{BaseURL: e.srv.URL, HTTPClient: &http.Client{Transport: recorder}}}
	var first protocol.RoomContent
	wait.Eventually(t, pollTimeout, "the room's definitions", func() (err error) {
		first, err = cache.Content(e.ctx, e.ns, "demo")
		return err
	})
	again, err := cache.Content(e.ctx, e.ns, "demo")
	if err != nil || again.Hash != first.Hash {
		t.Fatalf("again: %v, hash %s, want %s", err, again.Hash, first.Hash)
	}
	recorder.mu.Lock()
	last := recorder.statuses[len(recorder.statuses)-1]
	recorder.mu.Unlock()
	if last != http.StatusNotModified {
		t.Errorf("the second ask was answered %d, want 304", last)
	}
	wilds, _ := content.Named("wilds")
	if pack, ok := again.Pack(wilds.Definitions().Hash()); !ok || pack.Name != "wilds" {
		t.Errorf("the town's pack by its welcome's hash: %+v %v", pack.Name, ok)
	}
	var apiErr *pkgclient.APIError
	if _, err := cache.Content(e.ctx, e.ns, "nope"); !errors.As(err, &apiErr) || apiErr.Code != string(CodeRoomNotFound) {
		t.Errorf("an unknown room: %v, want room_not_found", err)
	}
}
