package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/playtest"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	pkgclient "github.com/roomkeeper/roomkeeper/pkg/client"
)

// dungeonIdle is the dungeon room's idleTimeout: its empty party
// instances, and the room itself once nobody plays, go after it.
const dungeonIdle = 30 * time.Second

// dungeonRoom is a town whose portal leads into an instanced crypt, and
// back, on the sample's database.
func dungeonRoom() *gamev1.GameRoom {
	return &gamev1.GameRoom{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "dungeon"},
		Spec: gamev1.GameRoomSpec{
			Image:      "roomkeeper/roomserver:dev",
			DefaultMap: "town",
			Maps: []gamev1.GameMap{
				{Name: "town", Config: gamev1.MapConfig{Seed: 5, Width: 256, Height: 256,
					Portals: []gamev1.Portal{{To: "crypt", X: 200, Y: 128}}}},
				{Name: "crypt", Instanced: true, Config: gamev1.MapConfig{Seed: 7, Width: 128, Height: 128, Biome: "dungeon",
					Portals: []gamev1.Portal{{To: "town", X: 64, Y: 24}}}},
			},
			RoomSettings: gamev1.RoomSettings{
				Database:    &gamev1.DatabaseRef{SecretRef: gamev1.SecretKeyRef{Name: "roomkeeper-db", Key: "dsn"}},
				IdleTimeout: &metav1.Duration{Duration: dungeonIdle},
			},
		},
	}
}

// joinDungeon joins the dungeon's town as a keyed player of the party
// partyToken is for ("": in no party).
func joinDungeon(t *testing.T, ctx context.Context, authKey, partyToken string, opts pkgclient.Options) *pkgclient.Client {
	t.Helper()
	var c *pkgclient.Client
	eventually(t, ctx, "joining the dungeon", func() error {
		res, err := joinAPI.Join(ctx, "default", "dungeon", pkgclient.JoinRequest{AuthKey: authKey, PartyToken: partyToken})
		if err != nil {
			return err
		}
		c, err = pkgclient.Dial(ctx, res.Endpoint, protocol.Hello{Ticket: res.Ticket}, opts)
		return err
	})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// dungeonParty creates a party of the dungeon led by the player of
// authKey and returns its leader's token and a member's.
func dungeonParty(t *testing.T, ctx context.Context, authKey string) (leader, member string) {
	t.Helper()
	p, err := joinAPI.CreateParty(ctx, "default", "dungeon", authKey)
	if err != nil {
		t.Fatalf("creating a party: %v", err)
	}
	m, err := joinAPI.Invite(ctx, "default", "dungeon", p)
	if err != nil {
		t.Fatalf("inviting to party %s: %v", p.Party, err)
	}
	return p.Token, m.Token
}

func throughPortal(t *testing.T, ctx context.Context, c *pkgclient.Client, to string) {
	t.Helper()
	ack, err := playtest.EnterPortal(ctx, c, to)
	if err != nil || !ack.OK {
		t.Fatalf("portal to %s: %+v %v", to, ack, err)
	}
	if got := c.Welcome().Map; got != to {
		t.Fatalf("after the portal to %s the player is on %s", to, got)
	}
}

// TestPartyWalksIntoItsInstanceAndBack: two players of one party walk from
// the town into the instanced crypt (a new MapInstance and pod appear),
// share it, walk back; a third player's destination dies under its
// transfer and it plays on in the town; the empty instance goes after
// idleTimeout, and the room after everyone left.
func TestPartyWalksIntoItsInstanceAndBack(t *testing.T) {
	ctx, cancel := context.WithTimeout(cluster(t), 6*time.Minute)
	defer cancel()
	room := dungeonRoom()
	if err := k8s.Create(ctx, room); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), room) })
	eventually(t, ctx, "the dungeon's town Ready", func() error { return mapReady(ctx, "dungeon-town") })

	leader, member := dungeonParty(t, ctx, "alice-dungeon-key")
	alice := joinDungeon(t, ctx, "alice-dungeon-key", leader, pkgclient.Options{})
	bob := joinDungeon(t, ctx, "bob-dungeon-key", member, pkgclient.Options{})
	throughPortal(t, ctx, alice, "crypt")
	instance := alice.Welcome().Instance
	if !strings.HasPrefix(instance, "dungeon-crypt-") {
		t.Fatalf("alice is on instance %q, want a party instance of the crypt", instance)
	}
	mi := &gamev1.MapInstance{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: instance}, mi); err != nil || !mi.Spec.Instanced {
		t.Fatalf("the party's MapInstance: %+v %v", mi.Spec, err)
	}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: instance}, &corev1.Pod{}); err != nil {
		t.Fatalf("the party's pod: %v", err)
	}
	throughPortal(t, ctx, bob, "crypt")
	if got := bob.Welcome().Instance; got != instance {
		t.Fatalf("bob is on %s, alice on %s: a party shares its instance", got, instance)
	}
	throughPortal(t, ctx, alice, "town")
	throughPortal(t, ctx, bob, "town")

	carolStaysInTownWhenHerDestinationDies(t, ctx)

	eventually(t, ctx, "the empty party instance deleted after idleTimeout", func() error {
		err := k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: instance}, &gamev1.MapInstance{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%w)", err)
	})
	eventually(t, ctx, "an IdleDeleted event", eventFor("IdleDeleted", "dungeon"))
	if err := mapReady(ctx, "dungeon-town"); err != nil {
		t.Fatalf("the town went with the instance: %v", err)
	}

	// Everyone leaves: once their seats are released (the resume grace)
	// and idleTimeout has passed without a player, the room expires.
	_, _ = alice.Close(), bob.Close()
	eventually(t, ctx, "a RoomExpired event", eventFor("RoomExpired", "dungeon"))
	eventually(t, ctx, "the empty room deleted", func() error {
		err := k8s.Get(ctx, client.ObjectKeyFromObject(room), &gamev1.GameRoom{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%w)", err)
	})
}

// carolStaysInTownWhenHerDestinationDies: carol gets her transfer, then
// her destination is killed before she says hello there; she comes back
// with the return ticket and plays on.
func carolStaysInTownWhenHerDestinationDies(t *testing.T, ctx context.Context) {
	t.Helper()
	carol := joinDungeon(t, ctx, "carol-dungeon-key", "", pkgclient.Options{NoFollow: true})
	town := carol.Endpoint()
	portal, _ := playtest.PortalTo(carol, "crypt")
	walkTo(t, ctx, carol, protocol.EntityState{X: portal.X, Y: portal.Y})
	ack, err := carol.Do(ctx, protocol.FeaturePortal, protocol.ActionEnter, protocol.PortalEnter{Portal: portal.Entity})
	if err != nil || !ack.OK {
		t.Fatalf("carol's portal.enter: %+v %v", ack, err)
	}
	s, err := carol.WaitFor(ctx, func(s pkgclient.State) bool { return s.Transfer != nil })
	if err != nil {
		t.Fatal(err)
	}
	tr := *s.Transfer
	pid, err := roomServerPID(tr.Instance)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if _, err := pkgclient.Dial(ctx, tr.Endpoint, protocol.Hello{Ticket: tr.Ticket}, pkgclient.Options{HandshakeTimeout: 3 * time.Second}); err == nil {
		t.Fatal("the killed destination answered")
	}
	back, err := pkgclient.Dial(ctx, town, protocol.Hello{Ticket: tr.ReturnTicket}, pkgclient.Options{})
	if err != nil {
		t.Fatalf("the way back: %v", err)
	}
	defer back.Close()
	if back.Welcome().Map != "town" {
		t.Fatalf("carol came back to %s", back.Welcome().Map)
	}
	seq, err := back.MoveSteps(-1, 0, 4)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := back.WaitFor(ctx, func(s pkgclient.State) bool { return s.AckSeq >= seq }); err != nil {
		t.Fatalf("carol cannot move after coming back: %v", err)
	}
}

// eventFor finds an event of reason about the named object.
func eventFor(reason, name string) func() error {
	return func() error {
		events := &corev1.EventList{}
		if err := k8s.List(context.Background(), events, client.InNamespace("default")); err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Reason == reason && e.InvolvedObject.Name == name {
				return nil
			}
		}
		return errors.New("none yet")
	}
}
