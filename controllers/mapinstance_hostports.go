package controllers

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// PortRange is an inclusive range of node ports for exposure HostPort.
type PortRange struct {
	Min, Max int32
}

// DefaultHostPortRange is the manager's --host-port-range when unset (the
// same as Agones' default).
var DefaultHostPortRange = PortRange{Min: 7000, Max: 7999}

// ParsePortRange reads "MIN-MAX", inclusive, within 1-65535.
func ParsePortRange(s string) (PortRange, error) {
	lo, hi, ok := strings.Cut(s, "-")
	minPort, errLo := strconv.ParseInt(strings.TrimSpace(lo), 10, 32)
	maxPort, errHi := strconv.ParseInt(strings.TrimSpace(hi), 10, 32)
	if !ok || errLo != nil || errHi != nil || minPort < 1 || maxPort > 65535 || minPort > maxPort {
		return PortRange{}, fmt.Errorf("port range %q: want MIN-MAX with 1 <= MIN <= MAX <= 65535", s)
	}
	return PortRange{Min: int32(minPort), Max: int32(maxPort)}, nil
}

func (r PortRange) String() string { return fmt.Sprintf("%d-%d", r.Min, r.Max) }

func (r PortRange) contains(port int32) bool { return port >= r.Min && port <= r.Max }

// hostPorts hands out node ports to the MapInstances with exposure
// HostPort. A port belongs to at most one MapInstance in the whole
// cluster, which is stricter than a port per node and needs no knowledge
// of where the scheduler puts a pod; the range caps how many such maps
// run at once. The truth is each MapInstance's status.hostPort: the
// allocator learns them from the cache before its first answer (after a
// manager restart as at start), and a reconcile writes the port into the
// status before it creates a pod that uses it. It is safe for concurrent
// reconciles.
type hostPorts struct {
	portRange PortRange
	// perNamespace, when positive, is how many ports one namespace's maps
	// may hold at once: the range is shared by every namespace, and one
	// tenant's maps must not take all of it.
	perNamespace int
	// recorded lists the ports the MapInstances' statuses hold; it is read
	// once, before the first assignment.
	recorded func() (map[types.NamespacedName]int32, error)

	mu     sync.Mutex
	loaded bool
	owner  map[int32]types.NamespacedName
	port   map[types.NamespacedName]int32
	held   map[string]int // ports per namespace
}

func newHostPorts(r PortRange, perNamespace int, recorded func() (map[types.NamespacedName]int32, error)) *hostPorts {
	return &hostPorts{portRange: r, perNamespace: perNamespace, recorded: recorded,
		owner: map[int32]types.NamespacedName{}, port: map[types.NamespacedName]int32{}, held: map[string]int{}}
}

// assign returns the port of key: the one it holds, the one its status
// names (current) when that is free and in range, or the lowest free one.
// ok is false when every port of the range is taken, or key's namespace
// holds its share (shareUsed tells which).
func (h *hostPorts) assign(key types.NamespacedName, current int32) (port int32, ok bool, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.load(); err != nil {
		return 0, false, err
	}
	if port, held := h.port[key]; held {
		return port, true, nil
	}
	if h.shareUsedLocked(key.Namespace) {
		return 0, false, nil
	}
	if owner, taken := h.owner[current]; h.portRange.contains(current) && (!taken || owner == key) {
		h.take(key, current)
		return current, true, nil
	}
	for p := h.portRange.Min; p <= h.portRange.Max; p++ {
		if _, taken := h.owner[p]; !taken {
			h.take(key, p)
			return p, true, nil
		}
	}
	return 0, false, nil
}

// shareUsed reports whether namespace holds its share of the range.
func (h *hostPorts) shareUsed(namespace string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.shareUsedLocked(namespace)
}

func (h *hostPorts) shareUsedLocked(namespace string) bool {
	return h.perNamespace > 0 && h.held[namespace] >= h.perNamespace
}

// release frees key's port: the MapInstance is gone or no longer wants one.
func (h *hostPorts) release(key types.NamespacedName) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if port, held := h.port[key]; held {
		delete(h.owner, port)
		delete(h.port, key)
		h.held[key.Namespace]--
	}
}

// swap exchanges the ports a and b hold: a handover's new pod takes the
// map over, and the handover keeps the old pod's port until it is gone.
func (h *hostPorts) swap(a, b types.NamespacedName) {
	h.mu.Lock()
	defer h.mu.Unlock()
	pa, okA := h.port[a]
	pb, okB := h.port[b]
	if !okA || !okB {
		return
	}
	h.port[a], h.port[b] = pb, pa
	h.owner[pa], h.owner[pb] = b, a
}

// handoverPortKey is the allocator's key for the second port a map holds
// during a handover under exposure HostPort; "/" cannot be in a name, so
// it never names a MapInstance.
func handoverPortKey(key types.NamespacedName) types.NamespacedName {
	return types.NamespacedName{Namespace: key.Namespace, Name: key.Name + "/handover"}
}

// load reads the recorded ports once. Two statuses naming the same port
// (written by hand, or by an older manager) keep it for the first in name
// order; the other is given a new port on its next reconcile.
func (h *hostPorts) load() error {
	if h.loaded {
		return nil
	}
	recorded, err := h.recorded()
	if err != nil {
		return fmt.Errorf("reading the host ports in use: %w", err)
	}
	keys := make([]types.NamespacedName, 0, len(recorded))
	for key := range recorded {
		keys = append(keys, key)
	}
	slices.SortFunc(keys, func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) })
	for _, key := range keys {
		if port := recorded[key]; h.portRange.contains(port) {
			if _, taken := h.owner[port]; !taken {
				h.take(key, port)
			}
		}
	}
	h.loaded = true
	return nil
}

func (h *hostPorts) take(key types.NamespacedName, port int32) {
	h.owner[port] = key
	h.port[key] = port
	h.held[key.Namespace]++
}
