package controllers

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// portWorld is the cluster as the allocator sees it: the MapInstances that
// exist and the hostPort their status records.
type portWorld struct {
	status map[types.NamespacedName]int32
}

func (w *portWorld) recorded() (map[types.NamespacedName]int32, error) {
	out := make(map[types.NamespacedName]int32, len(w.status))
	for k, v := range w.status {
		out[k] = v
	}
	return out, nil
}

// TestHostPortsNeverCollide drives the allocator through random sequences
// of MapInstances created (and reconciled), deleted, reconciled again, and
// manager restarts (a new allocator that learns from the statuses), with a
// range smaller than the maps that come and go: no two live MapInstances
// ever hold the same port, every port is in range, a map keeps its port
// across reconciles and restarts, and a map is refused only when the range
// is really full.
func TestHostPortsNeverCollide(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		r := PortRange{Min: 30000, Max: 30000 + int32(rng.IntN(8))}
		size := int(r.Max - r.Min + 1)
		world := &portWorld{status: map[types.NamespacedName]int32{}}
		alloc := newHostPorts(r, 0, world.recorded)
		next := 0
		for step := range 300 {
			switch op := rng.IntN(10); {
			case op < 4: // a new MapInstance is reconciled
				key := types.NamespacedName{Namespace: fmt.Sprintf("ns%d", next%3), Name: fmt.Sprintf("mi%d", next)}
				next++
				port, ok, err := alloc.assign(key, 0)
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					if len(world.status) < size {
						t.Fatalf("seed %d step %d: refused with %d of %d ports held", seed, step, len(world.status), size)
					}
					continue
				}
				world.status[key] = port // written before the pod is created
			case op < 7: // one is deleted
				for key := range world.status {
					delete(world.status, key)
					alloc.release(key)
					break
				}
			case op < 9: // every map is reconciled again
				for key, port := range world.status {
					again, ok, err := alloc.assign(key, port)
					if err != nil || !ok || again != port {
						t.Fatalf("seed %d step %d: %s held %d, reconciled to %d (ok %v, %v)", seed, step, key, port, again, ok, err)
					}
				}
			default: // the manager restarts
				alloc = newHostPorts(r, 0, world.recorded)
			}
			checkNoCollision(t, seed, step, r, world)
		}
	}
}

func checkNoCollision(t *testing.T, seed uint64, step int, r PortRange, world *portWorld) {
	t.Helper()
	holder := map[int32]types.NamespacedName{}
	for key, port := range world.status {
		if !r.contains(port) {
			t.Fatalf("seed %d step %d: %s holds %d, outside %s", seed, step, key, port, r)
		}
		if other, taken := holder[port]; taken {
			t.Fatalf("seed %d step %d: %s and %s both hold port %d", seed, step, key, other, port)
		}
		holder[port] = key
	}
}

// TestAHandWrittenDuplicateIsResolved: two statuses naming the same port
// (edited by hand, or left by an older manager) do not both keep it: the
// first in name order does, the other gets a free port.
func TestAHandWrittenDuplicateIsResolved(t *testing.T) {
	a := types.NamespacedName{Namespace: "games", Name: "a"}
	b := types.NamespacedName{Namespace: "games", Name: "b"}
	world := &portWorld{status: map[types.NamespacedName]int32{a: 7000, b: 7000}}
	alloc := newHostPorts(PortRange{Min: 7000, Max: 7001}, 0, world.recorded)
	if port, ok, _ := alloc.assign(b, 7000); !ok || port != 7001 {
		t.Errorf("b = %d (ok %v), want 7001", port, ok)
	}
	if port, ok, _ := alloc.assign(a, 7000); !ok || port != 7000 {
		t.Errorf("a = %d (ok %v), want 7000", port, ok)
	}
}

// TestANamespaceHoldsAtMostItsShare: with a share per namespace, one
// tenant's maps stop at it and another's still get ports; a freed port
// is the tenant's again; ports a namespace held before the share keep
// their maps, and it gets no more until it is under the share.
func TestANamespaceHoldsAtMostItsShare(t *testing.T) {
	in := func(ns, name string) types.NamespacedName { return types.NamespacedName{Namespace: ns, Name: name} }
	world := &portWorld{status: map[types.NamespacedName]int32{in("old", "1"): 7000, in("old", "2"): 7001, in("old", "3"): 7002}}
	alloc := newHostPorts(PortRange{Min: 7000, Max: 7099}, 2, world.recorded)
	for _, name := range []string{"a", "b"} {
		if _, ok, err := alloc.assign(in("greedy", name), 0); !ok || err != nil {
			t.Fatalf("greedy/%s within its share: ok %v %v", name, ok, err)
		}
	}
	if _, ok, _ := alloc.assign(in("greedy", "c"), 0); ok || !alloc.shareUsed("greedy") {
		t.Fatal("greedy's third map got a port past its share of 2")
	}
	if _, ok, _ := alloc.assign(in("other", "x"), 0); !ok {
		t.Fatal("another namespace was refused while ports are free")
	}
	alloc.release(in("greedy", "a"))
	if _, ok, _ := alloc.assign(in("greedy", "c"), 0); !ok {
		t.Fatal("greedy/c refused after one of greedy's ports was freed")
	}
	if port, ok, _ := alloc.assign(in("old", "2"), 7001); !ok || port != 7001 {
		t.Fatalf("a map that held its port before the share: %d %v, want it kept", port, ok)
	}
	if _, ok, _ := alloc.assign(in("old", "4"), 0); ok {
		t.Fatal("a namespace over its share (3 held from before) got a fourth port")
	}
}

// TestParsePortRange: the manager flag's format and bounds.
func TestParsePortRange(t *testing.T) {
	if r, err := ParsePortRange("7000-7999"); err != nil || r != (PortRange{7000, 7999}) {
		t.Errorf("7000-7999 = %v, %v", r, err)
	}
	if r, err := ParsePortRange("65535-65535"); err != nil || r != (PortRange{65535, 65535}) {
		t.Errorf("65535-65535 = %v, %v", r, err)
	}
	for _, bad := range []string{"", "7000", "8000-7000", "0-10", "1-70000", "a-b", "-5-5"} {
		if _, err := ParsePortRange(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestAHandoverHoldsTwoPortsThenOne: a map's handover takes a second
// port; the swap gives the map the new pod's port and the handover the
// old one, which its release frees; a manager restarted meanwhile learns
// both from the statuses.
func TestAHandoverHoldsTwoPortsThenOne(t *testing.T) {
	world := &portWorld{status: map[types.NamespacedName]int32{}}
	alloc := newHostPorts(PortRange{Min: 30000, Max: 30002}, 0, world.recorded)
	town := types.NamespacedName{Namespace: "games", Name: "demo-town"}
	old, _, _ := alloc.assign(town, 0)
	next, ok, _ := alloc.assign(handoverPortKey(town), 0)
	if !ok || next == old {
		t.Fatalf("the handover's port %d (ok %v), the map's %d: want another", next, ok, old)
	}
	alloc.swap(town, handoverPortKey(town))
	world.status[town], world.status[handoverPortKey(town)] = next, old // as the statuses say after the swap
	restarted := newHostPorts(alloc.portRange, 0, world.recorded)
	for _, a := range []*hostPorts{alloc, restarted} {
		if got, _, _ := a.assign(town, 0); got != next {
			t.Fatalf("the map holds %d after the swap, want the new pod's %d", got, next)
		}
		a.release(handoverPortKey(town))
		if got, _, _ := a.assign(types.NamespacedName{Namespace: "games", Name: "other"}, 0); got != old {
			t.Fatalf("another map got %d, want the freed %d", got, old)
		}
	}
}
