package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/controllers"
	"github.com/roomkeeper/roomkeeper/internal/playtest"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/wait"
	pkgclient "github.com/roomkeeper/roomkeeper/pkg/client"
)

// TestMapsMoveWithTheirPlayers: bots play on a map while a platform team
// does what it does to pods on real nodes, one after the other:
// kubectl delete pod, an image rollout to a second tag, kubectl drain of
// the map's node (each node in turn: one of them evicts the manager as
// well), and a rollout during which the manager is killed. Each is a
// handover: the bots follow a transfer to the new pod, none is
// disconnected, and the map never stops being Ready.
func TestMapsMoveWithTheirPlayers(t *testing.T) {
	ctx := installed(t, 10*time.Minute)
	room := createRoom(t, ctx, &gamev1.GameRoom{
		ObjectMeta: metav1.ObjectMeta{Namespace: roomNamespace, Name: "raid"},
		Spec: gamev1.GameRoomSpec{DefaultMap: "keep",
			Maps: []gamev1.GameMap{{Name: "keep", Config: gamev1.MapConfig{Seed: 9, Width: 256, Height: 256}}}},
	})
	name := gamev1.MapInstanceName(room.Name, "keep")
	waitReady(t, ctx, roomNamespace, name)
	bots := startBots(t, ctx, roomNamespace, room.Name, 4, pkgclient.Options{NetDialContext: dialInCluster})
	readiness := watchReady(ctx, name)

	handovers := 0
	handedOver := func(what string) {
		t.Helper()
		handovers++
		bots.expectTransfers(t, ctx, what, handovers)
	}

	pod := mapPod(t, ctx, name)
	if _, err := kubectl("", "-n", roomNamespace, "delete", "pod", pod.Name, "--wait=false"); err != nil {
		t.Fatal(err)
	}
	handedOver("kubectl delete pod")

	next := loadImage(t, suite.version+"-next")
	setImage(t, ctx, room, next)
	handedOver("the rollout to " + next)
	if pod := mapPod(t, ctx, name); pod.Spec.Containers[0].Image != next {
		t.Errorf("after the rollout the map runs %s, want %s", pod.Spec.Containers[0].Image, next)
	}

	// Each node in turn: the manager runs on one of them, so one drain
	// evicts it together with the map's pod, and its successor on the
	// other node must carry the handover.
	for range 2 {
		drained := mapPod(t, ctx, name).Spec.NodeName
		if _, err := kubectl("", "drain", drained, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=4m"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = kubectl("", "uncordon", drained) })
		handedOver("kubectl drain " + drained)
		if node := mapPod(t, ctx, name).Spec.NodeName; node == drained {
			t.Errorf("after the drain the map still runs on %s", node)
		}
		if _, err := kubectl("", "uncordon", drained); err != nil {
			t.Fatal(err)
		}
	}

	setImage(t, ctx, room, "roomkeeper/roomserver:"+suite.version)
	wait.Eventually(t, time.Minute, "the rollout's handover started", func() error {
		mi := &gamev1.MapInstance{}
		if err := suite.k8s.Get(ctx, client.ObjectKey{Namespace: roomNamespace, Name: name}, mi); err != nil {
			return err
		}
		if mi.Status.Handover == nil {
			return fmt.Errorf("no handover yet (%s)", mi.Status.Phase)
		}
		return nil
	})
	killManager(t)
	handedOver("a rollout whose manager was killed")

	bots.stop(t)
	bots.logAcks(t, "a Direct room through delete, rollout, two drains and a rollout under a killed manager")
	if stretches := readiness.stop(); len(stretches) > 0 {
		t.Errorf("the map was not Ready: %s", strings.Join(stretches, "; "))
	}
	expectNoForbidden(t, managerNamespace, roomNamespace)
}

// handoverBots is how many bots play a HostPort and a Gateway room through
// their handovers: the budget is for 50 players.
const handoverBots = 50

// bots are players that walk to and fro until stopped, without
// reconnecting by themselves: a dropped connection stays dropped. What a
// player feels of a handover is recorded: each move's time from its
// sending to its ack (the ack of a later move acks it too), and each
// switch's gap, from the bot's last ack on the old pod to its first on the
// new one, during which none of its input was acknowledged.
type bots struct {
	players []*pkgclient.Client
	done    chan struct{}
	wg      sync.WaitGroup

	mu       sync.Mutex
	acks     []time.Duration
	switches []time.Duration
	// told and crossings are the parts of each switch until the old pod's
	// transfer message and until the new pod's welcome: the rest is the
	// bot's next move and the snapshot that acks it.
	told, crossings []time.Duration
	// switched counts each bot's measured switches; lost counts moves
	// sent to an old pod that it never acknowledged before the switch.
	switched []int
	lost     int
}

// moveCadence is how often a bot moves: a snapshot's interval (10 Hz), so
// the bot's own pauses add little to the gap it measures at a switch;
// stepsPerMove fills that interval at the default 30 Hz tick: a player
// who holds a key down.
const (
	moveCadence  = 100 * time.Millisecond
	stepsPerMove = 3
)

func startBots(t *testing.T, ctx context.Context, namespace, room string, n int, opts pkgclient.Options) *bots {
	t.Helper()
	b := &bots{done: make(chan struct{}), switched: make([]int, n)}
	// Binary snapshots: fifty JSON decoders in this process would spend
	// the cores the cluster's pods measured here need.
	opts.Codec = protocol.CodecBinary
	for i := range n {
		joined := join(t, ctx, namespace, room, pkgclient.JoinRequest{AuthKey: fmt.Sprintf("%s-bot-%d", room, i)})
		b.players = append(b.players, play(t, ctx, joined, opts))
	}
	for i, p := range b.players {
		sent := &sentMoves{at: map[sentMove]time.Time{}}
		b.wg.Go(func() { b.walk(p, sent) })
		b.wg.Go(func() { b.timeAcks(i, p, sent) })
	}
	t.Cleanup(func() { b.halt() })
	return b
}

// sentMove is a move by the connection it was sent on (the client's
// transfers so far) and its input seq, which starts afresh on each new
// connection (docs/protocol.md).
type sentMove struct {
	conn int
	seq  uint32
}

// connOf is the number of the connection the client reads in s.
func connOf(s pkgclient.State) int { return s.Transfers + s.Returns }

// sentMoves are a bot's moves not acked yet, with when they were sent.
type sentMoves struct {
	mu sync.Mutex
	at map[sentMove]time.Time
}

// walk moves p to and fro until the bots stop.
func (b *bots) walk(p *pkgclient.Client, sent *sentMoves) {
	tick := time.NewTicker(moveCadence)
	defer tick.Stop()
	for dx := float32(1); ; dx = -dx {
		select {
		case <-b.done:
			return
		case <-tick.C:
		}
		// The connection is read before the move is sent: should the
		// client switch in between, the move counts as lost rather than
		// be matched with the new connection's seqs.
		at, conn := time.Now(), connOf(p.Snapshot())
		if seq, err := p.MoveSteps(dx, 0, stepsPerMove); err == nil { // a move the switch refuses is not sent: the gap shows it
			sent.mu.Lock()
			sent.at[sentMove{conn: conn, seq: seq}] = at
			sent.mu.Unlock()
		}
	}
}

// timeAcks records, as bot i's acks come, how long each move waited for
// its, and the gap of each switch to a new pod.
func (b *bots) timeAcks(i int, p *pkgclient.Client, sent *sentMoves) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-b.done; cancel() }()
	first := p.Snapshot()
	conn, lastSeq, lastAt := connOf(first), first.AckSeq, time.Now()
	var told, welcomed time.Time // the transfer message, the new connection, before its first ack
	transfer := first.Transfer
	_, _ = p.WaitFor(ctx, func(s pkgclient.State) bool {
		now := time.Now()
		if s.Transfer != transfer {
			transfer, told = s.Transfer, now
		}
		if connOf(s) != conn && welcomed.IsZero() {
			welcomed = now
		}
		switch {
		case connOf(s) != conn && s.AckSeq > 0: // the first ack on the new pod
			b.mu.Lock()
			b.switches = append(b.switches, now.Sub(lastAt))
			b.told, b.crossings = append(b.told, told.Sub(lastAt)), append(b.crossings, welcomed.Sub(lastAt))
			b.switched[i]++
			b.mu.Unlock()
			conn, lastSeq, lastAt, welcomed = connOf(s), s.AckSeq, now, time.Time{}
		case connOf(s) == conn && s.AckSeq > lastSeq:
			lastSeq, lastAt = s.AckSeq, now
		default:
			return false
		}
		b.settle(sent, conn, s.AckSeq, now)
		return false
	})
}

// settle records the waits of the moves acked by ackSeq on connection
// conn and counts those left unacked on earlier connections as lost.
func (b *bots) settle(sent *sentMoves, conn int, ackSeq uint32, now time.Time) {
	sent.mu.Lock()
	defer sent.mu.Unlock()
	b.mu.Lock()
	defer b.mu.Unlock()
	for m, at := range sent.at {
		switch {
		case m.conn < conn:
			b.lost++
		case m.conn == conn && m.seq <= ackSeq:
			b.acks = append(b.acks, now.Sub(at))
		default:
			continue
		}
		delete(sent.at, m)
	}
}

// awaitSwitches waits until every bot's want-th switch is measured: its
// first ack on the new pod has come.
func (b *bots) awaitSwitches(t *testing.T, what string, want int) {
	t.Helper()
	wait.Eventually(t, time.Minute, what+": every bot's first ack on the new pod", wait.True(func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return !slices.ContainsFunc(b.switched, func(n int) bool { return n < want })
	}, "a bot is still without an ack on the new pod"))
}

// logAcks logs what a player felt of what happened meanwhile
// (docs/benchmarks.md): the moves' time to their acks, and the gap of
// each switch between pods.
func (b *bots) logAcks(t *testing.T, what string) {
	t.Helper()
	b.mu.Lock()
	acks, switches, told, crossings, lost := slices.Clone(b.acks), slices.Clone(b.switches), slices.Clone(b.told), slices.Clone(b.crossings), b.lost
	b.mu.Unlock()
	for _, d := range [][]time.Duration{acks, switches, told, crossings} {
		slices.Sort(d)
	}
	if len(acks) == 0 || len(switches) == 0 {
		t.Errorf("%s: no move was acked, or no switch measured", what)
		return
	}
	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	t.Logf("%s: %d bots, %d moves acked: input to ack p50 %s, p99 %s, max %s; %d switches, gap from the last ack on the old pod to the first on the new p50 %s, p99 %s, max %s (until the transfer message p50 %s, p99 %s; until the welcome p50 %s, p99 %s); %d moves sent to an old pod and never acked (docs/benchmarks.md)",
		what, len(b.players), len(acks), ms(playtest.Percentile(acks, 0.5)), ms(playtest.Percentile(acks, 0.99)), ms(acks[len(acks)-1]),
		len(switches), ms(playtest.Percentile(switches, 0.5)), ms(playtest.Percentile(switches, 0.99)), ms(switches[len(switches)-1]),
		ms(playtest.Percentile(told, 0.5)), ms(playtest.Percentile(told, 0.99)),
		ms(playtest.Percentile(crossings, 0.5)), ms(playtest.Percentile(crossings, 0.99)), lost)
}

func (b *bots) halt() {
	select {
	case <-b.done:
	default:
		close(b.done)
	}
	b.wg.Wait()
}

// expectTransfers waits until every bot has followed want transfers and
// sees itself on the new pod; a bot that was disconnected fails the test.
func (b *bots) expectTransfers(t *testing.T, ctx context.Context, what string, want int) {
	t.Helper()
	for i, p := range b.players {
		s, err := p.WaitFor(ctx, func(s pkgclient.State) bool {
			return s.Closed != nil || (s.Transfers >= want && s.Sees(p.Welcome().PlayerID))
		})
		switch {
		case err != nil:
			t.Fatalf("%s: bot %d was not handed over: %v", what, i, err)
		case s.Closed != nil || s.Reconnects != 0:
			logEvents(t, what)
			t.Fatalf("%s: bot %d was disconnected (closed: %v, reconnects %d)", what, i, s.Closed, s.Reconnects)
		case s.Transfers != want:
			t.Fatalf("%s: bot %d followed %d transfers, want %d", what, i, s.Transfers, want)
		}
	}
	b.awaitSwitches(t, what, want)
}

// logEvents logs the events of every namespace, oldest first: they
// outlive the pods a handover deleted and say when it started, when the
// new pod was Ready, and whether it was abandoned.
func logEvents(t *testing.T, what string) {
	t.Helper()
	out, err := kubectl("", "get", "events", "--all-namespaces", "--sort-by=.lastTimestamp",
		"-o", "custom-columns=TIME:.lastTimestamp,NAMESPACE:.involvedObject.namespace,OBJECT:.involvedObject.name,REASON:.reason,MESSAGE:.message")
	if err != nil {
		t.Logf("events after %s: %v", what, err)
		return
	}
	t.Logf("events after %s:\n%s", what, out)
}

// stop halts the bots and checks the last move of each is acknowledged on
// the pod it ends on.
func (b *bots) stop(t *testing.T) {
	t.Helper()
	b.halt()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i, p := range b.players {
		seq, err := p.MoveSteps(1, 0, 1)
		if err != nil {
			t.Fatalf("bot %d: %v", i, err)
		}
		if _, err := p.WaitFor(ctx, func(s pkgclient.State) bool { return s.AckSeq >= seq }); err != nil {
			t.Errorf("bot %d: its last move was not acknowledged: %v", i, err)
		}
	}
}

// readiness samples a MapInstance's Ready condition until stopped.
type readiness struct {
	cancel    context.CancelFunc
	done      chan struct{}
	stretches []string
}

// watchReady records every stretch during which the map was not Ready.
func watchReady(ctx context.Context, name string) *readiness {
	ctx, cancel := context.WithCancel(ctx)
	r := &readiness{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		var since time.Time
		for ctx.Err() == nil {
			mi := &gamev1.MapInstance{}
			err := suite.k8s.Get(ctx, client.ObjectKey{Namespace: roomNamespace, Name: name}, mi)
			ready := err == nil && meta.IsStatusConditionTrue(mi.Status.Conditions, gamev1.ConditionReady)
			switch {
			case err != nil && ctx.Err() != nil:
			case !ready && since.IsZero():
				since = time.Now()
			case ready && !since.IsZero():
				r.stretches = append(r.stretches, fmt.Sprintf("%s for %s", since.Format(time.TimeOnly), time.Since(since).Round(time.Millisecond)))
				since = time.Time{}
			}
			time.Sleep(100 * time.Millisecond)
		}
		if !since.IsZero() {
			r.stretches = append(r.stretches, fmt.Sprintf("from %s on", since.Format(time.TimeOnly)))
		}
	}()
	return r
}

func (r *readiness) stop() []string {
	r.cancel()
	<-r.done
	return r.stretches
}

// mapPod is the map's pod as its status names it, once no handover is
// under way.
func mapPod(t *testing.T, ctx context.Context, name string) *corev1.Pod {
	return mapPodIn(t, ctx, roomNamespace, name)
}

// mapPodIn is mapPod for a map of namespace.
func mapPodIn(t *testing.T, ctx context.Context, namespace, name string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{}
	wait.Eventually(t, 2*time.Minute, name+"'s pod settled", func() error {
		mi := &gamev1.MapInstance{}
		if err := suite.k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, mi); err != nil {
			return err
		}
		if mi.Status.Handover != nil || mi.Status.PodName == "" {
			return fmt.Errorf("handover %+v, pod %q", mi.Status.Handover, mi.Status.PodName)
		}
		return suite.k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: mi.Status.PodName}, pod)
	})
	return pod
}

// setImage changes the room's image.
func setImage(t *testing.T, ctx context.Context, room *gamev1.GameRoom, image string) {
	t.Helper()
	wait.Eventually(t, time.Minute, "the room's image set to "+image, func() error {
		live := &gamev1.GameRoom{}
		if err := suite.k8s.Get(ctx, client.ObjectKeyFromObject(room), live); err != nil {
			return err
		}
		live.Spec.Image = image
		return suite.k8s.Update(ctx, live)
	})
}

// loadImage packs make images' room server as a second image with tag and
// imports it into every node, as a team loads a new build; it returns the
// image's name.
func loadImage(t *testing.T, tag string) string {
	t.Helper()
	out := t.TempDir()
	binary := filepath.Join(suite.root, "bin", "images", goruntime.GOARCH, "roomserver")
	pack := exec.Command("go", "run", "./hack/images", "--out", out, "--version", tag, "--arch", goruntime.GOARCH, "roomserver="+binary)
	pack.Dir = suite.root
	if raw, err := pack.CombinedOutput(); err != nil {
		t.Fatalf("packing %s: %v\n%s", tag, err, raw)
	}
	archives, _ := filepath.Glob(filepath.Join(out, "*.oci.tar"))
	load := exec.Command(suite.binary, append([]string{"load", "--dir", filepath.Join(suite.dir, "state"),
		"--node-bin", os.Getenv("ROOMKEEPER_NODE_BIN")}, archives...)...)
	if raw, err := load.CombinedOutput(); err != nil {
		t.Fatalf("cluster load: %v\n%s", err, raw)
	}
	return "roomkeeper/roomserver:" + tag
}

// killManager kills the manager's process with SIGKILL, as a crash or the
// OOM killer would; the kubelet restarts its container.
func killManager(t *testing.T) {
	t.Helper()
	pids := clusterProcesses(func(cmdline, _ string) bool { return strings.HasPrefix(cmdline, "/manager") })
	if len(pids) != 1 {
		t.Fatalf("want the one manager process of the cluster, found %v", pids)
	}
	if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
}

// clusterProcesses are the pids of the suite's containers' processes
// (in its cgroup) that match, by command line and environment.
func clusterProcesses(match func(cmdline, environ string) bool) []int {
	procs, _ := filepath.Glob("/proc/[0-9]*")
	var pids []int
	for _, p := range procs {
		cgroups, err := os.ReadFile(p + "/cgroup")
		if err != nil || !strings.Contains(string(cgroups), "/"+cgroupName+"/") {
			continue
		}
		cmdline, _ := os.ReadFile(p + "/cmdline")
		environ, _ := os.ReadFile(p + "/environ")
		if match(strings.ReplaceAll(string(cmdline), "\x00", " "), string(environ)) {
			var pid int
			if _, err := fmt.Sscan(filepath.Base(p), &pid); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// TestAMapKilledByItsNodeBacksOffThenQuarantines: the room server's
// process is killed on its node (SIGKILL, as the OOM killer does), not by
// the operator. The kubelet reports the container's exit (137); the
// operator counts it, restarts the map after its backoff, and quarantines
// it once the failures pass maxRestarts.
func TestAMapKilledByItsNodeBacksOffThenQuarantines(t *testing.T) {
	ctx := installed(t, 5*time.Minute)
	room := createRoom(t, ctx, &gamev1.GameRoom{
		ObjectMeta: metav1.ObjectMeta{Namespace: roomNamespace, Name: "fragile"},
		Spec: gamev1.GameRoomSpec{DefaultMap: "cave",
			Maps: []gamev1.GameMap{{Name: "cave", Config: gamev1.MapConfig{Seed: 4, Width: 128, Height: 128}}},
			RoomSettings: gamev1.RoomSettings{RestartPolicy: gamev1.RestartPolicy{MaxRestarts: 1,
				Window: &metav1.Duration{Duration: 10 * time.Minute}, Quarantine: &metav1.Duration{Duration: 10 * time.Minute},
				InitialBackoff: &metav1.Duration{Duration: time.Second}}}},
	})
	name := gamev1.MapInstanceName(room.Name, "cave")
	for kill := 1; kill <= 2; kill++ {
		waitReady(t, ctx, roomNamespace, name)
		pod := mapPod(t, ctx, name)
		pids := clusterProcesses(func(cmdline, environ string) bool {
			return strings.HasPrefix(cmdline, "/roomserver") && strings.Contains(environ, "\x00POD_NAME="+pod.Name+"\x00")
		})
		if len(pids) != 1 {
			t.Fatalf("want pod %s's one room-server process, found %v", pod.Name, pids)
		}
		if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		mi := &gamev1.MapInstance{}
		wait.Eventually(t, time.Minute, fmt.Sprintf("kill %d counted", kill), func() error {
			if err := suite.k8s.Get(ctx, client.ObjectKey{Namespace: roomNamespace, Name: name}, mi); err != nil {
				return err
			}
			if int(mi.Status.RestartCount) < kill {
				return fmt.Errorf("restartCount %d (%s)", mi.Status.RestartCount, mi.Status.Phase)
			}
			return nil
		})
		f := mi.Status.LastFailure
		if f == nil || f.ExitCode == nil || *f.ExitCode != 137 || f.Reason != controllers.FailurePodFailed {
			t.Errorf("kill %d: lastFailure %+v, want PodFailed with exit code 137", kill, f)
		}
	}
	wait.Eventually(t, time.Minute, name+" quarantined", func() error {
		mi := &gamev1.MapInstance{}
		if err := suite.k8s.Get(ctx, client.ObjectKey{Namespace: roomNamespace, Name: name}, mi); err != nil {
			return err
		}
		if mi.Status.Phase != gamev1.MapQuarantined {
			return fmt.Errorf("%s is %s", name, mi.Status.Phase)
		}
		return nil
	})
}

// newcomers are players who join while a map's pod is replaced: one every
// newcomerEvery, through the join API and on to where it sends them (a
// Gateway room: the map's own path on the gateway), each staying
// newcomerStay. Every one must be welcomed by a pod that serves it, the
// old one (which then hands it over with the others) or the new one, and
// must stay connected, following a handover by itself.
type newcomers struct {
	done chan struct{}
	wg   sync.WaitGroup

	mu       sync.Mutex
	arrived  int
	failures []string
}

const (
	newcomerEvery = 300 * time.Millisecond
	newcomerStay  = 3 * time.Second
	maxNewcomers  = 200 // a bound on the loop: a minute of newcomers
)

// startNewcomers starts players joining room until stop.
func startNewcomers(t *testing.T, ctx context.Context, namespace, room string, opts pkgclient.Options) *newcomers {
	t.Helper()
	n := &newcomers{done: make(chan struct{})}
	api := &pkgclient.JoinAPI{BaseURL: "http://" + managerAddress(t, ctx) + ":8090", HTTPClient: inCluster()}
	opts.Codec = protocol.CodecBinary
	n.wg.Go(func() {
		tick := time.NewTicker(newcomerEvery)
		defer tick.Stop()
		for i := range maxNewcomers {
			select {
			case <-n.done:
				return
			case <-tick.C:
			}
			n.wg.Go(func() { n.arrive(ctx, api, namespace, room, fmt.Sprintf("%s-newcomer-%d", room, i), opts) })
		}
	})
	t.Cleanup(n.halt)
	return n
}

// arrive joins as one newcomer and stays newcomerStay.
func (n *newcomers) arrive(ctx context.Context, api *pkgclient.JoinAPI, namespace, room, key string, opts pkgclient.Options) {
	fail := func(format string, args ...any) {
		n.mu.Lock()
		n.failures = append(n.failures, fmt.Sprintf(format, args...))
		n.mu.Unlock()
	}
	joined, err := api.Join(ctx, namespace, room, pkgclient.JoinRequest{AuthKey: key})
	if err != nil {
		fail("%s: joining: %v", key, err)
		return
	}
	player, err := pkgclient.Dial(ctx, joined.Endpoint, protocol.Hello{Ticket: joined.Ticket}, opts)
	if err != nil {
		fail("%s: connecting to %s: %v", key, joined.Endpoint, err)
		return
	}
	defer player.Close()
	n.mu.Lock()
	n.arrived++
	n.mu.Unlock()
	stay, cancel := context.WithTimeout(ctx, newcomerStay)
	defer cancel()
	if s, err := player.WaitFor(stay, func(s pkgclient.State) bool { return s.Closed != nil || s.Reconnects > 0 }); err == nil {
		fail("%s: welcomed at %s, then disconnected (closed: %v, reconnects %d)", key, joined.Endpoint, s.Closed, s.Reconnects)
	}
}

func (n *newcomers) halt() {
	select {
	case <-n.done:
	default:
		close(n.done)
	}
	n.wg.Wait()
}

// stop halts the newcomers and fails the test for every one that was not
// welcomed or did not stay.
func (n *newcomers) stop(t *testing.T, what string) {
	t.Helper()
	n.halt()
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.failures) > 0 {
		t.Errorf("%s: %d of %d newcomers were refused or dropped:\n%s", what, len(n.failures), n.arrived+len(n.failures), strings.Join(n.failures, "\n"))
	}
	t.Logf("%s: %d newcomers joined, every one welcomed and kept", what, n.arrived)
}
