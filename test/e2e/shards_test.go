package e2e

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	pkgclient "github.com/roomkeeper/roomkeeper/pkg/client"
)

// TestAFullMapGrowsAShard: on the local cluster, a town of 3 seats with
// shards {min 1, max 2}: two players make it nearly full and the
// operator starts a second shard; a third still fills the first, the
// next players (a party among them) go to the second, together; with
// both full a join is room_full, and a friend's full shard too. When the
// second empties, and the first has room, the second goes after the
// room's idleTimeout, and the first keeps its player.
//
// Tickets live 3 s here: a ticket holds its seat until it expires, used
// or not, so with the default 10 s the first shard would count its
// players twice while the second starts.
func TestAFullMapGrowsAShard(t *testing.T) {
	ctx, cancel := context.WithTimeout(cluster(t), 5*time.Minute)
	defer cancel()
	room := dungeonRoom()
	room.Name, room.Spec.MaxPlayersPerMap = "shards", 3
	room.Spec.Maps[0].Shards = &gamev1.ShardRange{Min: 1, Max: 2}
	room.Spec.Tokens.TTL = &metav1.Duration{Duration: 3 * time.Second}
	if err := k8s.Create(ctx, room); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), room) })

	first := []*pkgclient.Client{joinShard(t, ctx, "shard-a", "", ""), joinShard(t, ctx, "shard-b", "", "")}
	nearlyFull := time.Now()
	eventually(t, ctx, "a second shard Ready", func() error { return shardsReady(ctx, 2) })
	t.Logf("the second shard was Ready %s after the second player's welcome (docs/benchmarks.md, Shards)", time.Since(nearlyFull).Round(10*time.Millisecond))
	first = append(first, joinShard(t, ctx, "shard-c", "", ""))
	for _, c := range first {
		if got := c.Welcome().Instance; got != "shards-town" {
			t.Fatalf("%s while the first shard had seats: want shards-town", got)
		}
	}

	party, err := joinAPI.CreateParty(ctx, "default", "shards", "shard-lead")
	if err != nil {
		t.Fatal(err)
	}
	member, err := joinAPI.Invite(ctx, "default", "shards", party)
	if err != nil {
		t.Fatal(err)
	}
	second := []*pkgclient.Client{joinShard(t, ctx, "shard-lead", party.Token, ""), joinShard(t, ctx, "shard-member", member.Token, "")}
	friend := second[0].Welcome().Instance
	second = append(second, joinShard(t, ctx, "shard-friend", "", friend))
	for _, c := range second {
		if got := c.Welcome().Instance; got != "shards-town-s2" {
			t.Fatalf("%s with the first shard full: want shards-town-s2", got)
		}
	}
	for what, req := range map[string]pkgclient.JoinRequest{
		"a join with both shards full":    {AuthKey: "shard-late"},
		"a join of a friend's full shard": {AuthKey: "shard-late", Instance: friend},
	} {
		var apiErr *pkgclient.APIError
		if _, err := joinAPI.Join(ctx, "default", "shards", req); !errors.As(err, &apiErr) || apiErr.Code != "room_full" {
			t.Fatalf("%s: %v, want room_full", what, err)
		}
	}

	for _, c := range append(second, first[1:]...) {
		_ = c.Close()
	}
	emptied := time.Now()
	var emptySince time.Time
	eventually(t, ctx, "the empty second shard removed after idleTimeout", func() error {
		mi := &gamev1.MapInstance{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: "shards-town-s2"}, mi); err == nil && mi.Status.EmptySince != nil {
			emptySince = mi.Status.EmptySince.Time
		}
		return shardsReady(ctx, 1)
	})
	t.Logf("the empty second shard was gone %s after its players left (idleTimeout %s); its status said empty %s after they left",
		time.Since(emptied).Round(10*time.Millisecond), dungeonIdle, emptySince.Sub(emptied).Round(time.Second))
	got := &gamev1.GameRoom{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(room), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Shards != "town 1/2" {
		t.Fatalf("status shards %q, want town 1/2", got.Status.Shards)
	}
	if _, err := first[0].Move(1, 0); err != nil {
		t.Fatalf("the player left on the first shard: %v", err)
	}
}

// joinShard joins the shards room's town as the keyed player authKey,
// of the party partyToken is for and on the shard instance when set,
// and plays one move so that the room counts it active.
func joinShard(t *testing.T, ctx context.Context, authKey, partyToken, instance string) *pkgclient.Client {
	t.Helper()
	var c *pkgclient.Client
	eventually(t, ctx, "joining the town as "+authKey, func() error {
		res, err := joinAPI.Join(ctx, "default", "shards", pkgclient.JoinRequest{AuthKey: authKey, PartyToken: partyToken, Instance: instance})
		if err == nil {
			c, err = pkgclient.Dial(ctx, res.Endpoint, protocol.Hello{Ticket: res.Ticket}, pkgclient.Options{})
		}
		return err
	})
	t.Cleanup(func() { _ = c.Close() })
	if _, err := c.Move(0, 1); err != nil {
		t.Fatal(err)
	}
	return c
}

// shardsReady checks that the shards room's town has n shards, all
// Ready, as its status says.
func shardsReady(ctx context.Context, n int32) error {
	room := &gamev1.GameRoom{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: "shards"}, room); err != nil {
		return err
	}
	for _, s := range room.Status.ShardedMaps {
		if s.Map == "town" && s.Shards == n && s.Ready == n {
			return nil
		}
	}
	return fmt.Errorf("town shards %+v, want %d Ready", room.Status.ShardedMaps, n)
}
