// Package heartbeat reports a room server's liveness into its own
// MapInstance's status: players, tick, last checkpoint and the time, with
// server-side apply under the roomkeeper-roomserver field manager, so the
// operator (which owns every other status field) and the pod never fight.
// Between two of those a beat renews the pod's coordination.k8s.io Lease
// instead, which costs the API server about a third as much: the status
// is written every HeartbeatsPerTimeout beats, and at the next beat when
// what it says of the pod's state changed, or of its players in a way a
// join or the operator must know at once (docs/operations.md,
// "Heartbeats").
package heartbeat

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/internal/shards"
)

// DefaultInterval is how often a heartbeat is sent unless the pod is told
// otherwise: a third of the operator's default 15 s timeout (docs/design.md
// section 2; gamev1.RestartPolicy.HeartbeatIntervalOrDefault).
const DefaultInterval = gamev1.DefaultHeartbeatTimeout / gamev1.HeartbeatsPerTimeout

var (
	mapInstances = schema.GroupVersionResource{Group: gamev1.GroupVersion.Group, Version: gamev1.GroupVersion.Version, Resource: "mapinstances"}
	leases       = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
)

// Report is what one heartbeat says.
type Report struct {
	// Seats is how many players the map admits (--max-players), which
	// tells when a change of Players matters at once (cadence); 0 when
	// unknown: then every change does. It is not written.
	Seats   int
	Players int
	// ActivePlayers are the players who played lately (not idle).
	ActivePlayers int
	Tick          uint64
	// WaitingFor is what the pod waits for before it is ready (its
	// database, unreachable); "" for nothing.
	WaitingFor string
	// CheckpointRevision and CheckpointTime describe the newest committed
	// checkpoint; zero time when there has been none.
	CheckpointRevision int64
	CheckpointTime     time.Time
	// World is the newest checkpoint of the map's world; nil before the
	// first.
	World *World
}

// World is what a heartbeat says of the map's world (status.world).
type World struct {
	Revision, Tick                  int64
	Time                            time.Time
	RoomsCleared, BossPhase, BossHP int
	QuestPhases                     []string
	Error                           string
}

// status is the world as status.world holds it.
func (w *World) status() map[string]any {
	s := map[string]any{"revision": w.Revision, "tick": w.Tick}
	if !w.Time.IsZero() {
		s["checkpointTime"] = w.Time.UTC().Format(time.RFC3339)
	}
	for field, v := range map[string]int{"roomsCleared": w.RoomsCleared, "bossPhase": w.BossPhase, "bossHP": w.BossHP} {
		if v != 0 {
			s[field] = int64(v)
		}
	}
	if len(w.QuestPhases) > 0 {
		phases := make([]any, len(w.QuestPhases))
		for i, p := range w.QuestPhases {
			phases[i] = p
		}
		s["questPhases"] = phases
	}
	if w.Error != "" {
		s["lastError"] = truncate(w.Error, maxWaitingFor)
	}
	return s
}

// failure is why the world's checkpoints fail; "" while they are
// written, or before the first.
func (w *World) failure() string {
	if w == nil {
		return ""
	}
	return w.Error
}

// Reporter applies heartbeats to one MapInstance, and renews its pod's
// Lease between them.
type Reporter struct {
	client, leases  dynamic.NamespaceableResourceInterface
	namespace, name string
	clock           func() time.Time
}

// New returns a reporter for the MapInstance namespace/name.
func New(cfg *rest.Config, namespace, name string, clock func() time.Time) (*Reporter, error) {
	c, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Reporter{client: c.Resource(mapInstances), leases: c.Resource(leases), namespace: namespace, name: name, clock: clock}, nil
}

// Apply sends one heartbeat.
func (r *Reporter) Apply(ctx context.Context, rep Report) error {
	_, err := r.apply(ctx, rep)
	return err
}

// Handover is what a MapInstance says of a handover from one pod
// (status.handover, set by the operator when it replaces the pod by
// handover).
type Handover struct {
	// Endpoint is where the pod hands its players over: set once the pod
	// taking over is Ready, before the operator tells the old one to stop.
	Endpoint string
	// MapEndpoint is where players join a map that has an endpoint of its
	// own, apart from its pods' (behind a Gateway: the map's path, which
	// leads to the pod serving the map); "" for the others.
	MapEndpoint string
	// Started: the operator is starting the pod that takes over.
	Started bool
	// Possible: the pod is the map's, and the map replaces its pods by
	// handover, so a pod that is told to stop may see one start.
	Possible bool
	// Successor: the pod is the one a handover in progress starts, to
	// take the map over.
	Successor bool
}

// Handover sends a heartbeat and returns what the MapInstance it answers
// with says of a handover from pod.
func (r *Reporter) Handover(ctx context.Context, rep Report, pod string) (Handover, error) {
	obj, err := r.apply(ctx, rep)
	if err != nil {
		return Handover{}, err
	}
	mi := &gamev1.MapInstance{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, mi); err != nil {
		return Handover{}, fmt.Errorf("reading MapInstance %s/%s: %w", r.namespace, r.name, err)
	}
	h := Handover{Possible: mi.Status.HandsOver() && mi.Status.PodName == pod}
	if exposed := meta.FindStatusCondition(mi.Status.Conditions, gamev1.ConditionExposed); exposed != nil && exposed.Reason == gamev1.ReasonRouteAttached {
		h.MapEndpoint = mi.Status.Endpoint
	}
	if hv := mi.Status.Handover; hv != nil {
		h.Successor = hv.To == pod
		if hv.From == pod {
			h.Started, h.Endpoint = true, hv.Endpoint
		}
	}
	return h, nil
}

// AwaitHandover is the handover of pod, told to stop: its Endpoint is
// where pod hands its players over, "" when there is none. A pod deleted by someone else (kubectl delete
// pod, a drain) is stopped at about the moment the operator sees it go, so
// while a handover is possible it waits up to notice for one to start,
// then for as long as ctx lasts for the pod taking over to be Ready; it
// sends a heartbeat every poll meanwhile. A pod that is not the map's is
// refused its heartbeat and waits for nothing. Failed heartbeats are tried
// again; the last failure is returned when the wait ends without a target.
func (r *Reporter) AwaitHandover(ctx context.Context, report func() Report, pod string, notice, poll time.Duration) (Handover, error) {
	deadline, started := r.clock().Add(notice), false
	for {
		h, err := r.Handover(ctx, report(), pod)
		started = started || h.Started
		// A refusal (config/policy: the pod is not the map's, or no
		// longer) says as surely as an answer that no handover comes.
		noneComing := (err == nil && !h.Possible || apierrors.IsForbidden(err)) && !started
		switch {
		case h.Endpoint != "":
			return h, nil
		case noneComing, !started && !r.clock().Before(deadline):
			return Handover{}, err
		}
		select {
		case <-ctx.Done():
			return Handover{}, cmp.Or(err, ctx.Err())
		case <-time.After(poll):
		}
	}
}

func (r *Reporter) apply(ctx context.Context, rep Report) (*unstructured.Unstructured, error) {
	status := map[string]any{
		"players":       int64(rep.Players),
		"activePlayers": int64(rep.ActivePlayers),
		"tick":          int64(rep.Tick),
		"lastHeartbeat": r.clock().UTC().Format(time.RFC3339),
	}
	if rep.WaitingFor != "" {
		status["waitingFor"] = truncate(rep.WaitingFor, maxWaitingFor)
	}
	if !rep.CheckpointTime.IsZero() {
		status["lastCheckpoint"] = map[string]any{"revision": rep.CheckpointRevision, "time": rep.CheckpointTime.UTC().Format(time.RFC3339)}
	}
	if rep.World != nil {
		status["world"] = rep.World.status()
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gamev1.GroupVersion.String(), "kind": "MapInstance",
		"metadata": map[string]any{"name": r.name, "namespace": r.namespace},
		"status":   status,
	}}
	live, err := r.client.Namespace(r.namespace).ApplyStatus(ctx, r.name, obj, metav1.ApplyOptions{FieldManager: gamev1.FieldManagerRoomServer, Force: true})
	if err != nil {
		return nil, fmt.Errorf("heartbeat to MapInstance %s/%s: %w", r.namespace, r.name, err)
	}
	return live, nil
}

// Pod is the pod a room server runs in, as its Lease names it.
type Pod struct {
	Name string
	// UID is the pod's (downward API); without it the pod makes no Lease
	// and sends status heartbeats only.
	UID types.UID
}

// Renew renews pod's Lease: a sign of life between two status heartbeats
// (a merge patch of its spec.renewTime). A pod without a Lease makes it,
// as a kubelet makes its node's: named after the pod and owned by it, so
// that it goes with it, and holding duration (the room's heartbeat
// timeout). It fails when the pod may not (an operator before Leases
// granted no such thing: the caller then sends status heartbeats).
func (r *Reporter) Renew(ctx context.Context, pod Pod, duration time.Duration) error {
	if pod.Name == "" {
		return errors.New("no Lease: the pod's name is unknown")
	}
	now := metav1.NewMicroTime(r.clock())
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"renewTime": now}})
	if err != nil {
		return err
	}
	leases := r.leases.Namespace(r.namespace)
	_, err = leases.Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: gamev1.FieldManagerRoomServer})
	if apierrors.IsNotFound(err) && pod.UID != "" {
		_, err = leases.Create(ctx, PodLease(pod, duration, now), metav1.CreateOptions{FieldManager: gamev1.FieldManagerRoomServer})
	}
	if err != nil {
		return fmt.Errorf("renewing Lease %s/%s: %w", r.namespace, pod.Name, err)
	}
	return nil
}

// PodLease is the Lease pod makes, renewed at renewed: what the admission
// policy lets it make (config/policy) and the operator reads.
func PodLease(pod Pod, duration time.Duration, renewed metav1.MicroTime) *unstructured.Unstructured {
	lease := &coordinationv1.Lease{
		TypeMeta: metav1.TypeMeta{APIVersion: coordinationv1.SchemeGroupVersion.String(), Kind: "Lease"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            pod.Name,
			Labels:          map[string]string{gamev1.LabelManagedBy: gamev1.ManagedBy},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}},
		},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       &pod.Name,
			LeaseDurationSeconds: ptr.To(int32(duration / time.Second)),
			AcquireTime:          &renewed,
			RenewTime:            &renewed,
		},
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(lease)
	if err != nil {
		panic(err) // a typed object always converts
	}
	return &unstructured.Unstructured{Object: obj}
}

// Run beats every interval until ctx ends: a status heartbeat when one is
// due (cadence), else a renewal of pod's Lease, and a status heartbeat
// when the renewal fails. It reads the report from report and hands what
// the MapInstance says of a handover from or to pod to onBeat; failures
// of a status heartbeat go to onError and the next beat tries again.
func (r *Reporter) Run(ctx context.Context, interval time.Duration, report func() Report, pod Pod, onBeat func(Handover), onError func(error)) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	c := newCadence(interval)
	for {
		rep := report()
		if c.statusDue(rep, r.clock()) || !r.renewLease(ctx, &c, pod, onError) {
			if h, err := r.Handover(ctx, rep, pod.Name); err != nil && ctx.Err() == nil {
				onError(err)
			} else if err == nil {
				c.sent(rep, h, r.clock())
				onBeat(h)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// renewLease renews pod's Lease as this beat, and tells whether it did;
// a refusal goes to onError too (once a leaseRetry: cadence).
func (r *Reporter) renewLease(ctx context.Context, c *cadence, pod Pod, onError func(error)) bool {
	err := r.Renew(ctx, pod, c.timeout)
	if leaseRefused(err) {
		onError(fmt.Errorf("%w: status heartbeats only for %s", err, leaseRetry))
	}
	return c.renewed(err, r.clock())
}

// leaseRefused tells whether a renewal failed for good: the pod may not
// make or renew its Lease, or has none and cannot make one.
func leaseRefused(err error) bool { return apierrors.IsNotFound(err) || apierrors.IsForbidden(err) }

// cadence decides, beat by beat, between a status heartbeat and a Lease
// renewal.
type cadence struct {
	// said is what the last status heartbeat said; heard whether there
	// was one.
	said  Report
	heard bool
	// successor: the last answer named this pod the one a handover
	// starts. It learns from the status heartbeats' answers when that
	// handover ended without it (its predecessor died), so it sends one
	// every beat meanwhile.
	successor bool
	// renewals since the last status heartbeat.
	renewals int
	// noLeaseUntil: a renewal was refused, and none is tried before then
	// (the pod may not make or renew its Lease: an older operator's Role).
	noLeaseUntil time.Time
	// timeout is the room's heartbeat timeout: at least this often a
	// beat is a status heartbeat.
	timeout time.Duration
	// emptySaid and idleSaid are since when the status heartbeats have
	// said the map has no player, and no player playing; zero while they
	// say otherwise.
	emptySaid, idleSaid time.Time
}

// newCadence is the cadence of a pod that beats every interval.
func newCadence(interval time.Duration) cadence {
	return cadence{timeout: gamev1.HeartbeatsPerTimeout * interval}
}

// statusDue tells whether the beat at now is a status heartbeat: the
// first, every HeartbeatsPerTimeout-th, and any beat when rep says
// something the last one did not of the players or of the pod's state
// (waiting for its database, its world restored, its world's checkpoints
// failing or written again), while the pod waits to take a handover, or
// while it has no Lease.
func (c *cadence) statusDue(rep Report, now time.Time) bool {
	changed := c.countsMatter(rep, now) || rep.WaitingFor != c.said.WaitingFor ||
		(rep.World == nil) != (c.said.World == nil) || rep.World.failure() != c.said.World.failure()
	return !c.heard || changed || c.successor || c.renewals >= gamev1.HeartbeatsPerTimeout-1 || now.Before(c.noLeaseUntil)
}

// countsMatter tells whether the player counts moved from what the
// status says to rep's in a way that cannot wait for the next regular
// status heartbeat: a player into a map the status has held empty (or
// idle) for a heartbeat timeout, whose idle deletion may be near; a
// count of a map nearly full or leaving it (a join seats players by the
// counts, and adds a shard by them: shards.Headroom); any change while
// the seats are unknown. Other changes wait up to a timeout: players
// crossing between half-empty maps, as most do, and a map emptying
// (its idle clock starts that much later), so a map emptied and taken
// again in between costs no write at all.
func (c *cadence) countsMatter(rep Report, now time.Time) bool {
	was := c.said
	if was.Players == rep.Players && was.ActivePlayers == rep.ActivePlayers {
		return false
	}
	return rep.Seats <= 0 || nearlyFull(was) || nearlyFull(rep) ||
		c.takenAfterLong(c.emptySaid, rep.Players, now) || c.takenAfterLong(c.idleSaid, rep.ActivePlayers, now)
}

// takenAfterLong tells whether a count the status has said was 0 since
// since, for a timeout or longer, is n > 0 at now.
func (c *cadence) takenAfterLong(since time.Time, n int, now time.Time) bool {
	return n > 0 && !since.IsZero() && now.Sub(since) >= c.timeout
}

// nearlyFull tells whether rep's map has no more free seats than its
// headroom.
func nearlyFull(rep Report) bool {
	return rep.Seats > 0 && int32(rep.Seats-rep.Players) <= shards.Headroom(int32(rep.Seats))
}

// renewed records a Lease renewal at now that ended with err, and tells
// whether it counts as the beat; when it failed the beat is a status
// heartbeat instead. A pod that has no Lease, or may not renew it,
// tries again only after leaseRetry.
func (c *cadence) renewed(err error, now time.Time) bool {
	if err != nil {
		if leaseRefused(err) {
			c.noLeaseUntil = now.Add(leaseRetry)
		}
		return false
	}
	c.renewals++
	return true
}

// sent records a status heartbeat at now and its answer.
func (c *cadence) sent(rep Report, h Handover, now time.Time) {
	c.said, c.heard, c.successor, c.renewals = rep, true, h.Successor, 0
	c.emptySaid, c.idleSaid = zeroSince(c.emptySaid, rep.Players, now), zeroSince(c.idleSaid, rep.ActivePlayers, now)
}

// zeroSince is since when a count said n at now has said 0: since, or now
// for a count just become 0; zero for a count not 0.
func zeroSince(since time.Time, n int, now time.Time) time.Time {
	switch {
	case n != 0:
		return time.Time{}
	case since.IsZero():
		return now
	}
	return since
}

// leaseRetry is how long a pod whose Lease renewal was refused sends
// status heartbeats only: an older operator's Role grants no Lease, and a
// pod that does not know its UID makes none.
const leaseRetry = time.Minute

// maxWaitingFor is status.waitingFor's (and status.world.lastError's)
// length limit in the CRD.
const maxWaitingFor = 1024

// truncate cuts s to at most n bytes, on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
