package joinapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/wait"
)

// countingReader counts the reads that reach the API server.
type countingReader struct {
	client.Reader
	reads atomic.Int64
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.reads.Add(1)
	return c.Reader.Get(ctx, key, obj, opts...)
}

func (c *countingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c.reads.Add(1)
	return c.Reader.List(ctx, list, opts...)
}

// withLabels sets a room's labels.
func withLabels(l map[string]string) roomOption {
	return func(r *gamev1.GameRoom) { r.Labels = l }
}

// setRoomStatus writes a room's status as the operator would.
func (e *env) setRoomStatus(name string, mutate func(*gamev1.GameRoomStatus)) {
	e.t.Helper()
	room := &gamev1.GameRoom{}
	if err := k8s.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: name}, room); err != nil {
		e.t.Fatal(err)
	}
	mutate(&room.Status)
	if err := k8s.Status().Update(e.ctx, room); err != nil {
		e.t.Fatal(err)
	}
}

// lobby asks for path and decodes the page.
func (e *env) lobby(path string) protocol.RoomList {
	e.t.Helper()
	r := e.do(http.MethodGet, path, "", nil)
	if r.status != http.StatusOK {
		e.t.Fatalf("GET %s: %s", path, r)
	}
	var page protocol.RoomList
	if err := json.Unmarshal(r.body, &page); err != nil {
		e.t.Fatal(err)
	}
	return page
}

// TestTheLobbyListsRoomsFromTheCache: the lobby lists the rooms of a
// namespace (or of every namespace) that the label selector matches, with
// their maps, instances, live player counts and seats, sorted and paged;
// every answer comes from the cache, none from the API server; a room
// being deleted is gone from it; bad queries are bad_request.
func TestTheLobbyListsRoomsFromTheCache(t *testing.T) {
	live := &countingReader{Reader: mgr.GetAPIReader()}
	e := newEnv(t, func(o *Options) { o.APIReader = live })
	coop := map[string]string{"lobby-test": e.ns, "mode": "coop"}
	e.createRoom("gamma", withLabels(coop), withInstancedMap("crypt"))
	e.createRoom("alpha", withLabels(coop), withTownShards(1, 3, 100))
	e.createRoom("beta", withLabels(map[string]string{"lobby-test": e.ns, "mode": "pvp"}))
	e.setRoomStatus("alpha", func(s *gamev1.GameRoomStatus) {
		s.Phase, s.Players = gamev1.GameRoomRunning, 3
		s.Maps = []gamev1.MapDirectoryEntry{{Name: "town", Instance: "alpha-town", Phase: gamev1.MapReady, Endpoint: "ws://10.0.0.1:7350/ws", Players: 3, Shard: 1},
			{Name: "town", Instance: "alpha-town-s2", Phase: gamev1.MapStarting, Shard: 2}}
	})
	e.setRoomStatus("gamma", func(s *gamev1.GameRoomStatus) {
		s.Phase, s.Players = gamev1.GameRoomRunning, 3
		s.Maps = []gamev1.MapDirectoryEntry{
			{Name: "crypt", Instance: "gamma-crypt-p1", Phase: gamev1.MapReady, Players: 2},
			{Name: "crypt", Instance: "gamma-crypt-p2", Phase: gamev1.MapStarting},
			{Name: "town", Instance: "gamma-town", Phase: gamev1.MapStarting, Players: 1},
		}
	})
	coopQuery := "?labelSelector=" + url.QueryEscape("mode=coop,lobby-test="+e.ns)

	var page protocol.RoomList
	wait.Eventually(t, pollTimeout, "the coop rooms with their statuses", func() error {
		page = e.lobby("/v1/namespaces/" + e.ns + "/gamerooms" + coopQuery)
		if len(page.Rooms) != 2 || page.Rooms[0].Players != 3 || page.Rooms[1].Players != 3 {
			return fmt.Errorf("the coop rooms: %+v", page.Rooms)
		}
		return nil
	})
	alpha, gamma := page.Rooms[0], page.Rooms[1]
	if alpha.Name != "alpha" || gamma.Name != "gamma" || page.Continue != "" {
		t.Fatalf("coop rooms %s, %s (continue %q), want alpha then gamma on one page", alpha.Name, gamma.Name, page.Continue)
	}
	if !alpha.Joinable || alpha.Capacity != 200 || alpha.Phase != "Running" || alpha.Labels["mode"] != "coop" || len(alpha.Maps) != 1 ||
		alpha.Maps[0].Shards != 2 || alpha.Maps[0].MaxShards != 3 || alpha.Maps[0].Capacity != 100 ||
		alpha.Maps[0].Instances[0] != (protocol.InstanceSummary{Name: "alpha-town", Phase: "Ready", Players: 3, Shard: 1}) ||
		alpha.Maps[0].Instances[1] != (protocol.InstanceSummary{Name: "alpha-town-s2", Phase: "Starting", Shard: 2}) {
		t.Errorf("alpha (two shards of the town, of 3): %+v", alpha)
	}
	crypt := gamma.Maps[1]
	if gamma.Joinable || gamma.Capacity != 100 || crypt.Name != "crypt" || !crypt.Instanced || crypt.Players != 2 || len(crypt.Instances) != 2 ||
		crypt.Shards != 0 || gamma.Maps[0].Shards != 1 || gamma.Maps[0].MaxShards != 1 {
		t.Errorf("gamma (its town starting, two party crypts): %+v", gamma)
	}
	if body := string(e.do(http.MethodGet, "/v1/namespaces/"+e.ns+"/gamerooms"+coopQuery, "", nil).body); strings.Contains(body, "10.0.0.1") {
		t.Errorf("the lobby shows a pod's endpoint: %s", body)
	}

	// Live counts: the next answer has the operator's newest status.
	e.setRoomStatus("alpha", func(s *gamev1.GameRoomStatus) { s.Players, s.Maps[0].Players = 9, 9 })
	wait.Eventually(t, pollTimeout, "alpha's new count", func() error {
		if p := e.lobby("/v1/namespaces/" + e.ns + "/gamerooms" + coopQuery); p.Rooms[0].Players != 9 || p.Rooms[0].Maps[0].Players != 9 {
			return fmt.Errorf("alpha: %+v", p.Rooms[0])
		}
		return nil
	})

	// Pages of one, across namespaces, by the test's own label.
	all := "/v1/gamerooms?labelSelector=" + url.QueryEscape("lobby-test="+e.ns) + "&limit=1"
	var names []string
	for path := all; ; {
		p := e.lobby(path)
		for _, r := range p.Rooms {
			names = append(names, r.Namespace+"/"+r.Name)
		}
		if p.Continue == "" {
			break
		}
		path = all + "&continue=" + p.Continue
	}
	if want := []string{e.ns + "/alpha", e.ns + "/beta", e.ns + "/gamma"}; fmt.Sprint(names) != fmt.Sprint(want) {
		t.Errorf("pages of one: %v, want %v", names, want)
	}

	// A room being deleted leaves the lobby at once.
	beta := &gamev1.GameRoom{}
	if err := k8s.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "beta"}, beta); err != nil {
		t.Fatal(err)
	}
	beta.Finalizers = append(beta.Finalizers, "test.roomkeeper.dev/hold")
	if err := k8s.Update(e.ctx, beta); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(e.ctx, beta); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = k8s.Get(context.Background(), client.ObjectKeyFromObject(beta), beta)
		beta.Finalizers = nil
		_ = k8s.Update(context.Background(), beta)
	})
	wait.Eventually(t, pollTimeout, "beta gone", func() error {
		if p := e.lobby("/v1/namespaces/" + e.ns + "/gamerooms?labelSelector=" + url.QueryEscape("lobby-test="+e.ns)); len(p.Rooms) != 2 {
			return fmt.Errorf("%d rooms, want alpha and gamma without the deleted beta", len(p.Rooms))
		}
		return nil
	})

	for _, bad := range []string{"?labelSelector=" + url.QueryEscape("mode in (coop"), "?limit=0", "?limit=201", "?limit=x", "?continue=not-a-token"} {
		if r := e.do(http.MethodGet, "/v1/gamerooms"+bad, "", nil); r.status != http.StatusBadRequest || r.errorBody(t).Code != CodeBadRequest {
			t.Errorf("GET /v1/gamerooms%s: %s, want bad_request", bad, r)
		}
	}
	if n := live.reads.Load(); n != 0 {
		t.Errorf("the lobby read the API server %d times, want every answer from the cache", n)
	}
}

// TestTheLobbyIsRateLimited: the lobby is a player route, limited per
// client like the others.
func TestTheLobbyIsRateLimited(t *testing.T) {
	e := newEnv(t, withLimits(Limits{PerSecond: 0.001, Burst: 2}))
	for i := range 2 {
		if r := e.do(http.MethodGet, "/v1/namespaces/"+e.ns+"/gamerooms", "", nil); r.status != http.StatusOK {
			t.Fatalf("request %d: %s", i, r)
		}
	}
	if r := e.do(http.MethodGet, "/v1/gamerooms", "", nil); r.status != http.StatusTooManyRequests || r.errorBody(t).Code != CodeRateLimited {
		t.Errorf("past the burst: %s, want rate_limited", r)
	}
}
