package shards

import (
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
)

var room = &gamev1.GameRoom{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "ns", UID: "u"}}

// shard is shard n of the town with players, empty since emptyFor ago
// when emptyFor > 0.
func shard(n, players int32, emptyFor time.Duration, now time.Time) gamev1.MapInstance {
	mi := *New(room, gamev1.GameMap{Name: "town"}, n)
	mi.Status.Phase = gamev1.MapReady
	mi.Status.Players = players
	if emptyFor > 0 {
		mi.Status.EmptySince = &metav1.Time{Time: now.Add(-emptyFor)}
	}
	return mi
}

func names(list []gamev1.MapInstance) []string {
	var out []string
	for _, mi := range list {
		out = append(out, mi.Name)
	}
	return out
}

func TestNamesAndNumbers(t *testing.T) {
	now := time.Now()
	for n, want := range map[int32]string{1: "demo-town", 2: "demo-town-s2", 20: "demo-town-s20"} {
		mi := shard(n, 0, 0, now)
		if mi.Name != want || Number(&mi) != n {
			t.Errorf("shard %d is %s number %d, want %s", n, mi.Name, Number(&mi), want)
		}
	}
	deleting := shard(3, 0, 0, now)
	deleting.DeletionTimestamp = &metav1.Time{Time: now}
	instanced := shard(4, 0, 0, now)
	instanced.Spec.Instanced = true
	other := shard(5, 0, 0, now)
	other.Spec.MapName = "forest"
	got := names(Of("town", []gamev1.MapInstance{shard(2, 0, 0, now), deleting, instanced, other, shard(1, 0, 0, now)}))
	if !slices.Equal(got, []string{"demo-town", "demo-town-s2"}) {
		t.Errorf("Of = %v, want the town's live shards by number", got)
	}
}

func TestAdd(t *testing.T) {
	now := time.Now()
	crashed := shard(2, 0, 0, now)
	crashed.Status.Phase = gamev1.MapBackoff
	cases := []struct {
		name   string
		shards []gamev1.MapInstance
		lo, hi int32
		want   []int32
	}{
		{"the first", nil, 1, 1, []int32{1}},
		{"up to min", []gamev1.MapInstance{shard(2, 0, 0, now)}, 3, 3, []int32{1, 3}},
		{"room to spare", []gamev1.MapInstance{shard(1, 7, 0, now)}, 1, 3, nil},
		{"nearly full: a fifth of 10 seats left", []gamev1.MapInstance{shard(1, 8, 0, now)}, 1, 3, []int32{2}},
		{"nearly full at max", []gamev1.MapInstance{shard(1, 10, 0, now), shard(2, 9, 0, now)}, 1, 2, nil},
		{"a starting shard's seats count", []gamev1.MapInstance{shard(1, 10, 0, now), shard(2, 0, 0, now)}, 1, 3, nil},
		{"a crashed shard's do not", []gamev1.MapInstance{shard(1, 9, 0, now), crashed}, 1, 3, []int32{3}},
		{"the lowest free number", []gamev1.MapInstance{shard(1, 10, 0, now), shard(3, 10, 0, now)}, 1, 4, []int32{2}},
	}
	for _, tc := range cases {
		if got := Add(tc.shards, tc.lo, tc.hi, 10); !slices.Equal(got, tc.want) {
			t.Errorf("%s: Add = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestRemove(t *testing.T) {
	now := time.Now()
	const timeout = 10 * time.Minute
	cases := []struct {
		name   string
		shards []gamev1.MapInstance
		lo     int32
		want   []string
		idleIn time.Duration
	}{
		{"empty long enough", []gamev1.MapInstance{shard(1, 2, 0, now), shard(2, 0, 11*time.Minute, now)}, 1, []string{"demo-town-s2"}, 0},
		{"not yet", []gamev1.MapInstance{shard(1, 2, 0, now), shard(2, 0, 4*time.Minute, now)}, 1, nil, 6 * time.Minute},
		{"within min", []gamev1.MapInstance{shard(1, 2, 0, now), shard(2, 0, time.Hour, now)}, 2, nil, 0},
		{"with players", []gamev1.MapInstance{shard(1, 2, 0, now), shard(2, 1, 0, now)}, 1, nil, 0},
		{"the rest would be nearly full", []gamev1.MapInstance{shard(1, 9, 0, now), shard(2, 0, time.Hour, now)}, 1, nil, 0},
		{"highest first, while the rest has room", []gamev1.MapInstance{shard(1, 9, 0, now), shard(2, 0, time.Hour, now), shard(3, 0, time.Hour, now)},
			1, []string{"demo-town-s3"}, 0},
		{"the first is never surplus", []gamev1.MapInstance{shard(1, 0, time.Hour, now), shard(2, 3, 0, now)}, 1, nil, 0},
	}
	for _, tc := range cases {
		got, idleIn := Remove(tc.shards, tc.lo, 10, timeout, now)
		if !slices.Equal(names(got), tc.want) || idleIn != tc.idleIn {
			t.Errorf("%s: Remove = %v, %s; want %v, %s", tc.name, names(got), idleIn, tc.want, tc.idleIn)
		}
	}
}

func TestOrder(t *testing.T) {
	now := time.Now()
	taken := func(mi *gamev1.MapInstance) int32 { return mi.Status.Players }
	order := func(list []gamev1.MapInstance, lo int32, party string) []string {
		var out []string
		for _, mi := range Order(list, lo, 10, taken, party) {
			out = append(out, mi.Name)
		}
		return out
	}
	list := []gamev1.MapInstance{shard(1, 6, 0, now), shard(2, 3, 0, now), shard(3, 10, 0, now), shard(4, 0, 0, now)}
	if got := order(list, 1, ""); !slices.Equal(got, []string{"demo-town-s2", "demo-town", "demo-town-s4"}) {
		t.Errorf("Order = %v: want the least full in use, then the empty surplus, and no full one", got)
	}
	if got := order(list, 4, ""); !slices.Equal(got, []string{"demo-town-s4", "demo-town-s2", "demo-town"}) {
		t.Errorf("Order within min = %v: an empty base shard is in use", got)
	}
	// A party gets one order, the same for every member; parties spread.
	first := map[string]int{}
	for p := range 200 {
		party := fmt.Sprint("party-", p)
		got := order(list, 1, party)
		if !slices.Equal(got, order(slices.Clone(list), 1, party)) {
			t.Fatalf("party %s got two orders", party)
		}
		if got[len(got)-1] != "demo-town-s4" {
			t.Fatalf("party %s: %v, want the empty surplus last", party, got)
		}
		first[got[0]]++
	}
	if first["demo-town"] < 50 || first["demo-town-s2"] < 50 {
		t.Errorf("parties' first shards %v: want them spread over the shards in use", first)
	}
}

// BenchmarkOrder: what choosing a shard costs a join, at the most shards
// a map may have (20), for a player alone and for a party's member.
func BenchmarkOrder(b *testing.B) {
	now := time.Now()
	var list []gamev1.MapInstance
	for n := int32(1); n <= 20; n++ {
		list = append(list, shard(n, n*3%100, 0, now))
	}
	taken := func(mi *gamev1.MapInstance) int32 { return mi.Status.Players }
	for _, party := range []string{"", "p-7"} {
		b.Run("party="+party, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if len(Order(list, 1, 100, taken, party)) == 0 {
					b.Fatal("no shard")
				}
			}
		})
	}
}
