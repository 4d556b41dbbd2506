package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/mapgen"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
)

func TestPercentileIsNearestRank(t *testing.T) {
	ten := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, tc := range []struct {
		values []float64
		p      float64
		want   float64
	}{
		{nil, 0.5, 0},
		{[]float64{7}, 0.05, 7},
		{[]float64{7}, 0.99, 7},
		{ten, 0.05, 1},
		{ten, 0.1, 1},
		{ten, 0.11, 2},
		{ten, 0.5, 5},
		{ten, 0.9, 9},
		{ten, 0.99, 10},
		{ten, 1, 10},
	} {
		if got := percentile(tc.values, tc.p); got != tc.want {
			t.Errorf("percentile(%v, %v) = %v, want %v", tc.values, tc.p, got, tc.want)
		}
	}
}

func TestNewDistSortsAndSummarises(t *testing.T) {
	values := make([]float64, 0, 200)
	for i := 200; i >= 1; i-- { // descending: newDist sorts
		values = append(values, float64(i)/1000)
	}
	d := newDist(values)
	want := dist{N: 200, Min: 0.001, P5: 0.01, P50: 0.1, P90: 0.18, P99: 0.198, Max: 0.2}
	if d != want {
		t.Fatalf("newDist = %+v, want %+v", d, want)
	}
	if (newDist(nil) != dist{}) {
		t.Fatalf("newDist(nil) = %+v, want zero", newDist(nil))
	}
}

func TestBenchFlags(t *testing.T) {
	cfg, err := parseBenchFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.players != 200 || cfg.codec != protocol.CodecBinary || cfg.spawnPoints() != 1 || cfg.inputRate != cfg.tickRate ||
		cfg.serverCPU != 0 || cfg.botCPU != 1 {
		t.Fatalf("defaults: %+v", cfg)
	}
	cfg, err = parseBenchFlags([]string{"--players", "1000", "--spawn", "spread", "--input-rate", "10", "--server-flag", "--cell-size=48",
		"--server-flag", "--hysteresis=4"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.spawnPoints() != spreadSpawnPoints || cfg.inputRate != 10 || !slices.Equal(cfg.serverFlags, []string{"--cell-size=48", "--hysteresis=4"}) {
		t.Fatalf("parsed: %+v", cfg)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--players", "0"}, "--players 0"},
		{[]string{"--players", "5000"}, "--players 5000"},
		{[]string{"--players", "3", "--probes", "4"}, "--probes 4"},
		{[]string{"--npcs", "-1"}, "--npcs -1"},
		{[]string{"--spawn", "ring"}, `--spawn "ring"`},
		{[]string{"--codec", "msgpack"}, `--codec "msgpack"`},
		{[]string{"--walk", "run"}, `--walk "run"`},
		{[]string{"--duration", "500ms"}, "--duration 500ms"},
		{[]string{"--warmup", "-1s"}, "--warmup -1s"},
		{[]string{"--wait-idle", "2h"}, "--wait-idle 2h"},
		{[]string{"--tick-rate", "0"}, "--tick-rate 0"},
		{[]string{"--snapshot-rate", "40"}, "--snapshot-rate 40"},
		{[]string{"--input-rate", "31"}, "--input-rate 31"},
		{[]string{"--tick-rate", "120", "--input-rate", "60"}, "60 messages a second"},
		{[]string{"--tick-rate", "130", "--input-rate", "2"}, "at most 64"},
		{[]string{"--map-size", "8"}, "--map-size 8"},
		{[]string{"--player-speed", "257"}, "--player-speed 257"},
		{[]string{"--server-cpu", "1"}, "both 1"},
		{[]string{"--bot-cpu", "-2"}, "-1 for not pinned"},
		{[]string{"--server", ""}, "binary is required"},
		{[]string{"extra"}, "unexpected arguments"},
		{[]string{"--nope"}, "flag provided but not defined"},
	} {
		if _, err := parseBenchFlags(tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseBenchFlags(%q) = %v, want an error with %q", tc.args, err, tc.want)
		}
	}
}

func TestInputsDueCarryOneInputPerTick(t *testing.T) {
	for _, rates := range [][2]int{{30, 30}, {30, 10}, {30, 20}, {30, 7}, {60, 25}, {20, 3}} {
		tick, input := rates[0], rates[1]
		sum := 0
		for msg := range 3 * input {
			n := inputsDue(msg, tick, input)
			if n < 1 || n > maxInputsPerMessage(tick, input) {
				t.Fatalf("tick %d, input %d: message %d carries %d inputs", tick, input, msg, n)
			}
			sum += n
		}
		if sum != 3*tick {
			t.Errorf("tick %d, input %d: three seconds of messages carry %d inputs, want %d", tick, input, sum, 3*tick)
		}
	}
}

func TestHeadingStaysNearTheStart(t *testing.T) {
	const tickRate = 30
	for bot := range 20 {
		var x, y float64
		for seq := uint32(1); seq <= 4*tickRate; seq++ {
			dx, dy := heading(bot, seq, tickRate, "stay")
			if l := math.Hypot(float64(dx), float64(dy)); l > 1+1e-6 {
				t.Fatalf("bot %d seq %d: direction of length %v", bot, seq, l)
			}
			x, y = x+float64(dx), y+float64(dy)
		}
		if math.Hypot(x, y) > 1e-3 {
			t.Errorf("bot %d: after two out-and-back legs the inputs sum to (%.3f, %.3f), want 0", bot, x, y)
		}
	}
	a, _ := heading(1, 1, tickRate, "wander")
	b, _ := heading(1, tickRate+1, tickRate, "wander")
	c, _ := heading(2, 1, tickRate, "wander")
	if a == b || a == c {
		t.Errorf("wander: the same heading for another second (%v, %v) or another bot (%v)", a, b, c)
	}
}

// TestJSONInputIsWhatTheServerDecodes holds the hand-built movement
// command to the server's strict decoder.
func TestJSONInputIsWhatTheServerDecodes(t *testing.T) {
	inputs := []protocol.Input{{Seq: 7, X: 0.6, Y: -0.8}, {Seq: 8, X: -1, Y: 0}, {Seq: 9, X: 0.70710677, Y: 0.70710677}}
	for _, ackTick := range []uint64{0, 1180} {
		data := appendJSONInput(nil, 42, ackTick, inputs)
		env, err := protocol.DecodeEnvelope(data)
		if err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		var mi protocol.MovementInput
		if err := protocol.DecodePayload(env, &mi); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		if env.Seq != 42 || env.AckTick != ackTick || env.Feature != protocol.FeatureMovement || !slices.Equal(mi.Inputs, inputs) {
			t.Fatalf("%s decodes to %+v %+v", data, env, mi)
		}
		for _, in := range mi.Inputs {
			if err := protocol.ValidateInput(in); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestPeekJSON(t *testing.T) {
	snap, err := protocol.MarshalMessage(protocol.KindSnapshot, 0, protocol.Snapshot{Tick: 1183, AckSeq: 912, Mode: protocol.ModeDelta, BaseTick: 1182,
		Presence: protocol.Presence{Add: []protocol.Arrival{{ID: 40, Kind: 2}}}, Movement: []protocol.Position{{ID: 40, X: 99, Y: 70.5}}})
	if err != nil {
		t.Fatal(err)
	}
	first, err := protocol.MarshalMessage(protocol.KindSnapshot, 0, protocol.Snapshot{Tick: 5, Mode: protocol.ModeFull})
	if err != nil {
		t.Fatal(err)
	}
	refusal, err := protocol.MarshalMessage(protocol.KindError, 0, protocol.Error{Code: protocol.CodeRateLimited, Message: `slow "down"`})
	if err != nil {
		t.Fatal(err)
	}
	pong, err := protocol.MarshalMessage(protocol.KindPong, 3, protocol.Pong{ClientTime: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		data []byte
		want jsonPeek
		ok   bool
	}{
		{snap, jsonPeek{kind: protocol.KindSnapshot, tick: 1183, ackSeq: 912}, true},
		{first, jsonPeek{kind: protocol.KindSnapshot, tick: 5}, true},
		{refusal, jsonPeek{kind: protocol.KindError, code: protocol.CodeRateLimited}, true},
		{pong, jsonPeek{kind: protocol.KindPong}, true},
		{[]byte(`{"v":1,"kind":"snapshot","payload":{"tick":1}}`), jsonPeek{kind: protocol.KindSnapshot, tick: 1}, false},
		{[]byte(`{"v":1,"kind":"snapshot"}`), jsonPeek{kind: protocol.KindSnapshot}, false},
		{[]byte(`not json`), jsonPeek{}, false},
	} {
		got, ok := peekJSON(tc.data)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("peekJSON(%s) = %+v, %v; want %+v, %v", tc.data, got, ok, tc.want, tc.ok)
		}
	}
}

// TestAcknowledgedTimesEachInput: one snapshot may acknowledge several
// inputs; each is timed from its own send to that snapshot, once.
func TestAcknowledgedTimesEachInput(t *testing.T) {
	b := &liteBot{}
	send := func(seq uint32, at time.Duration) {
		b.sentAt[seq%latencyRing].Store(int64(at))
		b.sentSeq[seq%latencyRing].Store(seq)
	}
	send(1, 0)
	send(2, 10*time.Millisecond)
	send(3, 20*time.Millisecond)
	b.acknowledged(2, int64(40*time.Millisecond), true)
	b.acknowledged(2, int64(50*time.Millisecond), true) // a later snapshot of the same ackSeq: nothing new
	b.acknowledged(1, int64(60*time.Millisecond), true) // never backwards
	b.acknowledged(3, int64(70*time.Millisecond), false)
	if want := []uint32{40000, 30000}; !slices.Equal(b.latencies, want) || b.acked != 3 {
		t.Fatalf("latencies %v acked %d, want %v and 3 (the third outside the window)", b.latencies, b.acked, want)
	}
	// An ackSeq far past what the ring remembers counts the rest unmatched.
	send(latencyRing+10, 80*time.Millisecond)
	b.acknowledged(latencyRing+10, int64(90*time.Millisecond), true)
	if b.unmatched != latencyRing+10-3-1 || b.latencies[len(b.latencies)-1] != 10000 {
		t.Fatalf("unmatched %d, latencies %v", b.unmatched, b.latencies)
	}
}

func TestParseProc(t *testing.T) {
	stat := []byte("4242 (room (server) x) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 75 0 0 20 0 9 0 100 800000000 5000 18446744073709551615\n")
	ticks, err := parseProcStatCPU(stat)
	if err != nil || ticks != 325 {
		t.Fatalf("parseProcStatCPU = %d, %v; want 325", ticks, err)
	}
	if _, err := parseProcStatCPU([]byte("4242 (x) S 1 2")); err == nil {
		t.Fatal("a short stat line parsed")
	}
	status := []byte("Name:\troomserver\nVmHWM:\t  180224 kB\nVmRSS:\t  150000 kB\nThreads:\t9\nCpus_allowed_list:\t0\n")
	rss, peak, cpus, err := parseProcStatus(status)
	if err != nil || rss != 150000 || peak != 180224 || cpus != "0" {
		t.Fatalf("parseProcStatus = %d %d %q %v", rss, peak, cpus, err)
	}
	if _, _, _, err := parseProcStatus([]byte("Name:\tzombie\n")); err == nil {
		t.Fatal("a status without memory parsed")
	}
	machine := []byte("cpu  1220159 0 317695 1181424 14068 0 14791 12388 0 0\n" +
		"cpu0 603071 1 152924 608269 3060 2 6800 6115 0 0\ncpu1 617088 0 164770 573154 11008 0 7991 6272 0 0\nintr 1 2 3\n")
	want := map[string]cpuTicks{"cpu0": {busy: 603071 + 1 + 152924 + 2 + 6800, steal: 6115}, "cpu1": {busy: 617088 + 164770 + 7991, steal: 6272}}
	if got := parseCPUTicks(machine); !maps.Equal(got, want) {
		t.Fatalf("parseCPUTicks = %v, want %v", got, want)
	}
}

func TestMetricsAndTheirDeltas(t *testing.T) {
	page := func(b1, b2, b4, inf, sum float64) promMetrics {
		t.Helper()
		m, err := parseMetrics(strings.NewReader(`# HELP roomkeeper_roomserver_tick_duration_seconds Work.
# TYPE roomkeeper_roomserver_tick_duration_seconds histogram
roomkeeper_roomserver_tick_duration_seconds_bucket{le="0.001"} ` + ftoa(b1) + `
roomkeeper_roomserver_tick_duration_seconds_bucket{le="0.002"} ` + ftoa(b2) + `
roomkeeper_roomserver_tick_duration_seconds_bucket{le="0.004"} ` + ftoa(b4) + `
roomkeeper_roomserver_tick_duration_seconds_bucket{le="+Inf"} ` + ftoa(inf) + `
roomkeeper_roomserver_tick_duration_seconds_sum ` + ftoa(sum) + `
roomkeeper_roomserver_disconnects_total{reason="slow"} 2
roomkeeper_roomserver_disconnects_total{reason="closed"} ` + ftoa(sum*100) + `
roomkeeper_roomserver_dropped_inputs_total 1.5e+06
`))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	before, after := page(100, 100, 100, 100, 0.1), page(1089, 1098, 1100, 1100, 0.2)
	if got := after.get("roomkeeper_roomserver_dropped_inputs_total"); got != 1.5e6 {
		t.Fatalf("dropped = %v", got)
	}
	if got := tickQuantile(before, after, 0.99); got != 0.002 {
		t.Fatalf("p99 bucket = %v, want 0.002 (989 of 1,000 in the first, 998 by the second)", got)
	}
	if got := tickQuantile(before, after, 0.999); got != 0.004 {
		t.Fatalf("p99.9 bucket = %v, want 0.004", got)
	}
	if got := tickQuantile(before, page(100, 100, 100, 200, 1), 0.5); !math.IsInf(got, 1) {
		t.Fatalf("past the last bucket = %v, want +Inf", got)
	}
	if got := tickQuantile(before, before, 0.5); !math.IsNaN(got) {
		t.Fatalf("no observations = %v, want NaN", got)
	}
	if got := sumDelta(before, after, "roomkeeper_roomserver_disconnects_total"); math.Abs(got-10) > 1e-9 {
		t.Fatalf("disconnects = %v, want 10", got)
	}
	if _, err := parseMetrics(strings.NewReader("novalue\n")); err == nil {
		t.Fatal("a line without a value parsed")
	}
}

func ftoa(v float64) string { b, _ := json.Marshal(v); return string(b) }

// TestResultLine: one JSON object per line, appended run after run.
func TestResultLine(t *testing.T) {
	res := benchResult{Time: "2026-11-26T10:00:00Z", Config: benchParams{Players: 200, Spawn: "point", Codec: "binary"},
		Clients: clientSummary([]*liteBot{
			{id: 1, snapshots: 400, bytes: 300000, inputsSent: 600, latencies: []uint32{30000, 50000}},
			{id: 2, snapshots: 380, bytes: 250000, inputsSent: 600, latencies: []uint32{40000}, serverErrors: map[protocol.Code]int{protocol.CodeRateLimited: 1}},
			{id: 3, dialErr: os.ErrDeadlineExceeded},
		}, 20),
		Server: serverStats{Cores: 0.41, TickP99BucketMs: 4}}
	res.warn()
	path := filepath.Join(t.TempDir(), "runs.jsonl")
	for range 2 {
		if err := writeResult(path, nil, res); err != nil {
			t.Fatal(err)
		}
	}
	var stdout bytes.Buffer
	if err := writeResult("", &stdout, res); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != stdout.String()+stdout.String() || strings.Count(stdout.String(), "\n") != 1 {
		t.Fatalf("file %q, stdout %q: want the same line twice, one line per run", data, stdout.String())
	}
	var line map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	clients := line["clients"].(map[string]any)
	if clients["connected"] != 2.0 || clients["failed"] != 1.0 || clients["errors"] != 2.0 {
		t.Fatalf("clients: %v", clients)
	}
	if hz := clients["snapshotHz"].(map[string]any); hz["p50"] != 19.0 || hz["p5"] != 19.0 {
		t.Fatalf("snapshotHz: %v", hz)
	}
	if lat := clients["latencyMs"].(map[string]any); lat["n"] != 3.0 || lat["p50"] != 40.0 || lat["p99"] != 50.0 {
		t.Fatalf("latencyMs: %v", lat)
	}
	if kb := clients["downKBps"].(map[string]any); kb["p50"] != 12.5 || kb["p99"] != 15.0 {
		t.Fatalf("downKBps: %v", kb)
	}
	if line["server"].(map[string]any)["tickP99BucketMs"] != 4.0 || len(line["warnings"].([]any)) == 0 {
		t.Fatalf("line: %s", stdout.String())
	}
	var summary bytes.Buffer
	printSummary(&summary, res)
	if !strings.Contains(summary.String(), "p50 40.0 ms, p99 50.0 ms") || !strings.Contains(summary.String(), "warning:") {
		t.Fatalf("summary:\n%s", summary.String())
	}
}

// TestBenchAgainstARealServer runs `roomload bench` end to end: a
// roomserver binary built here, pinned to CPU 0, a few lite bots and a
// probe in this process for about two seconds.
func TestBenchAgainstARealServer(t *testing.T) {
	dir := t.TempDir()
	server := filepath.Join(dir, "roomserver")
	if out, err := exec.Command("go", "build", "-o", server, "../roomserver").CombinedOutput(); err != nil {
		t.Fatalf("building roomserver: %v\n%s", err, out)
	}
	out := filepath.Join(dir, "runs.jsonl")
	for _, codec := range []string{protocol.CodecBinary, protocol.CodecJSON} {
		err := run([]string{"bench", "--server", server, "--bot-cpu=-1", "--server-cpu=0", "--players=4", "--probes=1",
			"--npcs=50", "--spawn=spread", "--codec=" + codec, "--duration=1s", "--warmup=500ms", "--input-rate=10", "--out", out})
		if err != nil {
			t.Fatalf("%s: %v", codec, err)
		}
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	runs := 0
	for sc.Scan() {
		runs++
		var res benchResult
		if err := json.Unmarshal(sc.Bytes(), &res); err != nil {
			t.Fatal(err)
		}
		c := res.Clients
		if c.Connected != 3 || c.Errors != 0 || res.Probes.OK != 1 {
			t.Errorf("%s: clients %+v, probes %+v", res.Config.Codec, c, res.Probes)
		}
		if c.SnapshotHz.Min <= 0 || c.DownKBps.Min <= 0 || c.LatencyMs.N == 0 || c.LatencyMs.P50 <= 0 {
			t.Errorf("%s: no snapshots or no latency measured: %+v", res.Config.Codec, c)
		}
		if res.EntitiesBeforePlayers <= 0 || res.Entities < res.EntitiesBeforePlayers+4 {
			t.Errorf("%s: entities %v before, %v after: want NPCs, then 4 players more", res.Config.Codec, res.EntitiesBeforePlayers, res.Entities)
		}
		if res.Server.PeakRSSMiB <= 0 || res.ServerCPUs != "0" {
			t.Errorf("%s: server %+v on CPUs %q", res.Config.Codec, res.Server, res.ServerCPUs)
		}
	}
	if runs != 2 {
		t.Fatalf("%d lines in %s, want 2", runs, out)
	}
}

func TestBenchMapConfigAsksForTheNPCs(t *testing.T) {
	cfg, err := parseBenchFlags([]string{"--npcs", "2000"})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := benchMapConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := mapgen.ParseConfig(raw)
	if err != nil {
		t.Fatal(err)
	}
	world, err := mapgen.Generate(parsed)
	if err != nil {
		t.Fatal(err)
	}
	walkable := float64(world.WalkableCells())
	if parsed.Width != 512 || parsed.Seed != benchSeed || math.Abs(parsed.NPCDensity*walkable-2000) > 1e-6 {
		t.Fatalf("config %s: density %v of %v walkable cells, want 2,000 NPCs", raw, parsed.NPCDensity, walkable)
	}
	cfg.npcs = int(walkable) + 1
	if _, err := benchMapConfig(cfg); err == nil || !strings.Contains(err.Error(), "walkable cells") {
		t.Fatalf("more NPCs than walkable cells: %v", err)
	}
}
