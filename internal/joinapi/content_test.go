package joinapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/content"
	"github.com/roomkeeper/roomkeeper/internal/packs"
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

// publishPack plays the operator for a GameContent in namespace ns: the
// pack, its revision's ConfigMap and the status that names it.
func (e *env) publishPack(ns string, pack content.Pack) {
	e.t.Helper()
	encoded, err := pack.Encode()
	if err != nil {
		e.t.Fatal(err)
	}
	gc := &gamev1.GameContent{ObjectMeta: metav1.ObjectMeta{Name: pack.Name, Namespace: ns}}
	if err := json.Unmarshal(encoded, &gc.Spec); err != nil {
		e.t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: pack.Name + "-" + content.Revision(encoded), Namespace: ns,
		Labels: map[string]string{"app.kubernetes.io/managed-by": "roomkeeper"}},
		Data: map[string]string{packs.FileKey: string(encoded)}}
	for _, obj := range []client.Object{gc, cm} {
		if err := k8s.Create(e.ctx, obj); err != nil {
			e.t.Fatal(err)
		}
	}
	gc.Status.Revision, gc.Status.ConfigMap = content.Revision(encoded), cm.Name
	if err := k8s.Status().Update(e.ctx, gc); err != nil {
		e.t.Fatal(err)
	}
}

// TestARoomsGameContentDefinitions: a map that names a GameContent of its
// namespace gets that pack's definitions; a room of another namespace
// naming the same pack never sees it (its map runs no pack it may see).
func TestARoomsGameContentDefinitions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	safari, _ := content.Named("wilds")
	safari.Name = "safari"
	safari.Enemies[0].Name = "lion"
	e.publishPack(e.ns, safari)
	e.createRoom("demo", func(r *gamev1.GameRoom) { r.Spec.Maps[0].Config.Content = "safari" })
	var defs protocol.RoomContent
	wait.Eventually(t, pollTimeout, "the safari's definitions", func() error {
		got := e.getContent(e.ns, "demo", "")
		if err := json.Unmarshal(got.body, &defs); err != nil || got.status != http.StatusOK {
			return fmt.Errorf("%s: %w", got, err)
		}
		if defs.Maps["town"] != "safari" {
			return fmt.Errorf("the town plays %q", defs.Maps["town"])
		}
		return nil
	})
	if defs.Packs["safari"].Enemies[0].Name != "lion" || defs.Hashes["safari"] != safari.Definitions().Hash() {
		t.Errorf("the safari's definitions are not the GameContent's: %+v", defs.Packs["safari"].Enemies)
	}

	other := newEnv(t)
	other.createRoom("demo", func(r *gamev1.GameRoom) { r.Spec.Maps[0].Config.Content = "safari" })
	got := other.eventually(http.StatusOK, "", func() reply { return other.getContent(other.ns, "demo", "") })
	var theirs protocol.RoomContent
	if err := json.Unmarshal(got.body, &theirs); err != nil {
		t.Fatal(err)
	}
	if len(theirs.Packs) != 0 || theirs.Maps["town"] != "" {
		t.Errorf("a room of another namespace sees %v: want no pack", theirs.Maps)
	}
}
