package main

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
)

// maxErrorSamples is how many error messages a result quotes.
const maxErrorSamples = 5

// benchResult is one run: the JSON line `roomload bench` writes.
type benchResult struct {
	Time   string      `json:"time"`
	Label  string      `json:"label,omitempty"`
	Config benchParams `json:"config"`
	// EntitiesBeforePlayers is the server's entity count before any
	// player joined: the NPCs (and any loot, doors, portals) of the map.
	EntitiesBeforePlayers float64 `json:"entitiesBeforePlayers"`
	// Entities is the count at the end of the window, players included.
	Entities       float64      `json:"entities"`
	ConnectSeconds float64      `json:"connectSeconds"`
	WindowSeconds  float64      `json:"windowSeconds"`
	Clients        clientStats  `json:"clients"`
	Probes         probeStats   `json:"probes"`
	Server         serverStats  `json:"server"`
	Bots           botStats     `json:"bots"`
	Machine        machineStats `json:"machine"`
	ServerCPUs     string       `json:"serverCPUs"`
	BotCPUs        string       `json:"botCPUs"`
	BotGOMAXPROCS  int          `json:"botGOMAXPROCS"`
	Warnings       []string     `json:"warnings,omitempty"`
}

// benchParams are the run's settings.
type benchParams struct {
	Players      int      `json:"players"`
	NPCs         int      `json:"npcs"`
	Spawn        string   `json:"spawn"`
	SpawnPoints  int      `json:"spawnPoints"`
	Codec        string   `json:"codec"`
	Walk         string   `json:"walk"`
	TickRate     int      `json:"tickRate"`
	SnapshotRate int      `json:"snapshotRate"`
	InputRate    int      `json:"inputRate"`
	Duration     string   `json:"duration"`
	Warmup       string   `json:"warmup"`
	Probes       int      `json:"probes"`
	MapSize      int      `json:"mapSize"`
	PlayerSpeed  int      `json:"playerSpeed,omitempty"`
	ServerFlags  []string `json:"serverFlags,omitempty"`
	Fight        bool     `json:"fight,omitempty"`
}

// dist summarises values: count and percentiles (nearest rank).
type dist struct {
	N   int     `json:"n"`
	Min float64 `json:"min"`
	P5  float64 `json:"p5"`
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// clientStats are the lite bots' measurements.
type clientStats struct {
	Connected int `json:"connected"`
	Failed    int `json:"failed"`
	// SnapshotHz is each client's snapshots a second over the window.
	SnapshotHz dist `json:"snapshotHz"`
	// DownKBps is each client's downstream, kB (1,000 bytes) of WebSocket
	// payload a second.
	DownKBps dist `json:"downKBps"`
	// LatencyMs is every input's wait, pooled over all clients: from
	// sending input seq s to receiving the first snapshot with ackSeq >= s.
	LatencyMs dist `json:"latencyMs"`
	// InputsPerSecond is each client's inputs sent a second (the tick
	// rate when the bots keep up).
	InputsPerSecond dist `json:"inputsPerSecond"`
	// Unmatched counts acknowledged inputs whose send time was not known.
	Unmatched int `json:"unmatched"`
	// Errors counts clients that failed: no connection, a broken one, a
	// frame they could not read, or an error message from the server.
	Errors       int                   `json:"errors"`
	ServerErrors map[protocol.Code]int `json:"serverErrors,omitempty"`
	BadFrames    int                   `json:"badFrames"`
	ErrorSamples []string              `json:"errorSamples,omitempty"`
}

// probeStats are the full clients' results.
type probeStats struct {
	Count      int  `json:"count"`
	OK         int  `json:"ok"`
	SnapshotHz dist `json:"snapshotHz"`
	RTTMs      dist `json:"rttMs"`
	// EventsPerSec are the events each probe got a second; EventGaps the
	// event ids the probes missed, all told (with --fight everything
	// happens in view: a missed id is a lost event).
	EventsPerSec dist     `json:"eventsPerSec"`
	EventGaps    int      `json:"eventGaps"`
	Problems     []string `json:"problems,omitempty"`
}

// serverStats are the room server's, over the window unless named total.
type serverStats struct {
	Cores         float64 `json:"cores"`
	TickWorkCores float64 `json:"tickWorkCores"`
	// TickP99BucketMs is the upper bound of the tick-duration bucket
	// holding the window's p99 (-1: past the last bucket).
	TickP99BucketMs    float64 `json:"tickP99BucketMs"`
	PeakRSSMiB         float64 `json:"peakRSSMiB"`
	EndRSSMiB          float64 `json:"endRSSMiB"`
	DroppedInputs      float64 `json:"droppedInputs"`
	SkippedInputs      float64 `json:"skippedInputs"`
	RejectedInputs     float64 `json:"rejectedInputs"`
	DroppedInputsTotal float64 `json:"droppedInputsTotal"`
	SkippedInputsTotal float64 `json:"skippedInputsTotal"`
	SkippedSteps       float64 `json:"skippedSteps"`
	Disconnects        float64 `json:"disconnects"`
	SentKBps           float64 `json:"sentKBps"`
	MeanSnapshotBytes  float64 `json:"meanSnapshotBytes"`
	// EventsPerSec are the map's events a second.
	EventsPerSec float64 `json:"eventsPerSec"`
}

// botStats are this process's.
type botStats struct {
	Cores float64 `json:"cores"`
}

// machineStats show what else ran: every CPU's busy and stolen time, in
// cores over the window, and on the server's and the bots' CPUs the time
// not spent by them. Other processes (or the kernel's loopback work, which
// is counted to no process) took that.
type machineStats struct {
	CPUBusy         map[string]float64 `json:"cpuBusy"`
	CPUSteal        map[string]float64 `json:"cpuSteal"`
	OthersServerCPU float64            `json:"othersOnServerCPU"`
	OthersBotCPU    float64            `json:"othersOnBotCPU"`
}

// percentile is the nearest-rank p-quantile (0 < p <= 1) of sorted values.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(0, min(len(sorted)-1, i))]
}

// newDist summarises values (which it sorts).
func newDist(values []float64) dist {
	slices.Sort(values)
	if len(values) == 0 {
		return dist{}
	}
	return dist{N: len(values), Min: round3(values[0]), P5: round3(percentile(values, 0.05)), P50: round3(percentile(values, 0.5)),
		P90: round3(percentile(values, 0.9)), P99: round3(percentile(values, 0.99)), Max: round3(values[len(values)-1])}
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// summarize builds the result from the stopped fleet and the samples
// before any player joined and at either end of the window.
func summarize(cfg benchConfig, f *fleet, before promMetrics, start, end sample) benchResult {
	window := f.windowEnd.Sub(f.windowStart).Seconds()
	res := benchResult{
		Time: time.Now().UTC().Format(time.RFC3339), Label: cfg.label,
		Config: benchParams{Players: cfg.players, NPCs: cfg.npcs, Spawn: cfg.spawn, SpawnPoints: cfg.spawnPoints(), Codec: cfg.codec,
			Walk: cfg.walk, TickRate: cfg.tickRate, SnapshotRate: cfg.snapshotRate, InputRate: cfg.inputRate,
			Duration: cfg.duration.String(), Warmup: cfg.warmup.String(), Probes: cfg.probes, MapSize: cfg.mapSize, PlayerSpeed: cfg.playerSpeed, ServerFlags: cfg.serverFlags, Fight: cfg.fight},
		EntitiesBeforePlayers: before.get("roomkeeper_roomserver_entities"),
		Entities:              end.metrics.get("roomkeeper_roomserver_entities"),
		WindowSeconds:         round3(window),
		Clients:               clientSummary(f.bots, window),
		Probes:                probeSummary(f.probes, window),
		Server:                serverSummary(start, end),
		Bots:                  botStats{Cores: round3((end.botCPU - start.botCPU).Seconds() / end.at.Sub(start.at).Seconds())},
		Machine:               machineSummary(start, end),
	}
	others := func(cpu int, used float64) float64 {
		if cpu < 0 {
			return 0
		}
		return round3(max(0, res.Machine.CPUBusy["cpu"+strconv.Itoa(cpu)]-used))
	}
	res.Machine.OthersServerCPU = others(cfg.serverCPU, res.Server.Cores)
	res.Machine.OthersBotCPU = others(cfg.botCPU, res.Bots.Cores)
	return res
}

func clientSummary(bots []*liteBot, window float64) clientStats {
	var s clientStats
	var hz, kbps, inputs, latency []float64
	for _, b := range bots {
		if b == nil {
			continue
		}
		failure := b.dialErr
		if failure == nil {
			failure = cmpErr(b.readErr, b.writeErr)
		}
		if b.dialErr != nil {
			s.Failed++
		} else {
			s.Connected++
			hz = append(hz, float64(b.snapshots)/window)
			kbps = append(kbps, float64(b.bytes)/1000/window)
			inputs = append(inputs, float64(b.inputsSent)/window)
			for _, us := range b.latencies {
				latency = append(latency, float64(us)/1000)
			}
			s.Unmatched += b.unmatched
			s.BadFrames += b.badFrames
		}
		for code, n := range b.serverErrors {
			if s.ServerErrors == nil {
				s.ServerErrors = map[protocol.Code]int{}
			}
			s.ServerErrors[code] += n
		}
		if failure == nil && b.badFrames > 0 {
			failure = fmt.Errorf("%d frames it could not read", b.badFrames)
		}
		if failure == nil && len(b.serverErrors) > 0 {
			codes := slices.Sorted(maps.Keys(b.serverErrors))
			failure = fmt.Errorf("server error %s", codes[0])
		}
		if failure != nil {
			s.Errors++
			if len(s.ErrorSamples) < maxErrorSamples {
				s.ErrorSamples = append(s.ErrorSamples, fmt.Sprintf("player %d: %v", b.id, failure))
			}
		}
	}
	s.SnapshotHz, s.DownKBps, s.InputsPerSecond, s.LatencyMs = newDist(hz), newDist(kbps), newDist(inputs), newDist(latency)
	return s
}

// cmpErr is the first non-nil error.
func cmpErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func probeSummary(probes []*probe, window float64) probeStats {
	s := probeStats{Count: len(probes)}
	var hz, rtts, events []float64
	for _, p := range probes {
		if p == nil {
			continue
		}
		if problem := p.problem(); problem != "" {
			s.Problems = append(s.Problems, fmt.Sprintf("probe %d: %s", p.id, problem))
		} else {
			s.OK++
		}
		if p.dialErr == nil {
			hz = append(hz, float64(p.end.Snapshots-p.start.Snapshots)/window)
			events = append(events, float64(p.end.EventCount-p.start.EventCount)/window)
			s.EventGaps += p.end.EventGaps - p.start.EventGaps
			for _, rtt := range windowRTTs(p.start.RTTs, p.end.RTTs, window) {
				rtts = append(rtts, float64(rtt)/float64(time.Millisecond))
			}
		}
	}
	s.SnapshotHz, s.RTTMs, s.EventsPerSec = newDist(hz), newDist(rtts), newDist(events)
	return s
}

// windowRTTs are the ping round trips answered in the window: those added
// between the two states, or, once the client's bounded list is full and
// drops the oldest, the last one a second of the window.
func windowRTTs(start, end []time.Duration, window float64) []time.Duration {
	if len(end) > len(start) {
		return end[len(start):]
	}
	return end[max(0, len(end)-int(window)):]
}

func serverSummary(start, end sample) serverStats {
	window := end.at.Sub(start.at).Seconds()
	delta := func(series string) float64 { return end.metrics.get(series) - start.metrics.get(series) }
	p99 := tickQuantile(start.metrics, end.metrics, 0.99) * 1000
	if math.IsInf(p99, 1) || math.IsNaN(p99) {
		p99 = -1
	}
	snapBytes, snapCount := 0.0, 0.0
	for _, codec := range []string{protocol.CodecBinary, protocol.CodecJSON} {
		snapBytes += delta(`roomkeeper_roomserver_snapshot_bytes_sum{codec="` + codec + `"}`)
		snapCount += delta(`roomkeeper_roomserver_snapshot_bytes_count{codec="` + codec + `"}`)
	}
	s := serverStats{
		Cores:              round3((end.serverCPU - start.serverCPU).Seconds() / window),
		TickWorkCores:      round3(delta(tickHistogram+"_sum") / window),
		TickP99BucketMs:    p99,
		PeakRSSMiB:         round3(float64(end.peakRSSKiB) / 1024),
		EndRSSMiB:          round3(float64(end.rssKiB) / 1024),
		DroppedInputs:      delta("roomkeeper_roomserver_dropped_inputs_total"),
		SkippedInputs:      delta("roomkeeper_roomserver_skipped_inputs_total"),
		RejectedInputs:     delta("roomkeeper_roomserver_rejected_inputs_total"),
		DroppedInputsTotal: end.metrics.get("roomkeeper_roomserver_dropped_inputs_total"),
		SkippedInputsTotal: end.metrics.get("roomkeeper_roomserver_skipped_inputs_total"),
		SkippedSteps:       delta("roomkeeper_roomserver_skipped_steps_total"),
		Disconnects:        sumDelta(start.metrics, end.metrics, "roomkeeper_roomserver_disconnects_total"),
		SentKBps:           round3(sumDelta(start.metrics, end.metrics, "roomkeeper_roomserver_sent_bytes_total") / 1000 / window),
		EventsPerSec:       round3(delta("roomkeeper_roomserver_events_total") / window),
	}
	if snapCount > 0 {
		s.MeanSnapshotBytes = math.Round(snapBytes / snapCount)
	}
	return s
}

func machineSummary(start, end sample) machineStats {
	window := end.at.Sub(start.at).Seconds()
	m := machineStats{CPUBusy: map[string]float64{}, CPUSteal: map[string]float64{}}
	for cpu, e := range end.cpus {
		s := start.cpus[cpu]
		m.CPUBusy[cpu] = round3(float64(e.busy-s.busy) / userHZ / window)
		m.CPUSteal[cpu] = round3(float64(e.steal-s.steal) / userHZ / window)
	}
	return m
}

// sumDelta is the change of every series of metric name (any labels).
func sumDelta(before, after promMetrics, name string) float64 {
	sum := 0.0
	for series, v := range after {
		if series == name || strings.HasPrefix(series, name+"{") {
			sum += v - before[series]
		}
	}
	return sum
}

// warn lists what a reader of the result should know before trusting it.
func (r *benchResult) warn() {
	add := func(format string, args ...any) { r.Warnings = append(r.Warnings, fmt.Sprintf(format, args...)) }
	if r.Bots.Cores >= botCPUWarning {
		add("the bots used %.2f cores: near one core, the client-side figures (latency, rates) may be the bots' limit, not the server's", r.Bots.Cores)
	}
	if r.Machine.OthersServerCPU >= othersWarning || r.Machine.OthersBotCPU >= othersWarning {
		add("other work took %.2f of the server's CPU and %.2f of the bots': the figures are not clean", r.Machine.OthersServerCPU, r.Machine.OthersBotCPU)
	}
	if r.Server.Cores >= serverCPUWarning {
		add("the server used %.2f cores: it saturated its CPU", r.Server.Cores)
	}
	if want := float64(r.Config.TickRate); r.Clients.InputsPerSecond.N > 0 && r.Clients.InputsPerSecond.P5 < 0.9*want {
		add("the bots sent fewer inputs than one per tick (p5 %.1f/s, want %.0f/s): they did not keep up", r.Clients.InputsPerSecond.P5, want)
	}
	if r.Clients.Failed > 0 || r.Clients.Errors > 0 {
		add("%d of %d clients failed or saw errors", r.Clients.Errors, r.Clients.Connected+r.Clients.Failed)
	}
	if r.Probes.OK < r.Probes.Count {
		add("%d of %d probes found a problem", r.Probes.Count-r.Probes.OK, r.Probes.Count)
	}
	if r.Clients.Unmatched > 0 {
		add("%d acknowledged inputs had no known send time", r.Clients.Unmatched)
	}
	if r.ServerCPUs == "" || r.ServerCPUs == r.BotCPUs || strings.ContainsAny(r.BotCPUs, ",-") {
		add("server and bots are not pinned to CPUs of their own (server %q, bots %q)", r.ServerCPUs, r.BotCPUs)
	}
}

// printSummary writes a few lines for a person.
func printSummary(w io.Writer, r benchResult) {
	c, s := r.Clients, r.Server
	fmt.Fprintf(w, "bench: %d players (%s, %d spawn points), %.0f entities before them (%d NPCs asked), %s codec, tick %d Hz, snapshots %d Hz, inputs %d/s; %.1fs measured after %s warm-up\n",
		r.Config.Players, r.Config.Spawn, r.Config.SpawnPoints, r.EntitiesBeforePlayers, r.Config.NPCs, r.Config.Codec,
		r.Config.TickRate, r.Config.SnapshotRate, r.Config.InputRate, r.WindowSeconds, r.Config.Warmup)
	fmt.Fprintf(w, "  lite bots %d (%d failed, %d with errors): snapshots p50 %.1f Hz, p5 %.1f Hz; downstream p50 %.1f kB/s, p99 %.1f kB/s\n",
		c.Connected, c.Failed, c.Errors, c.SnapshotHz.P50, c.SnapshotHz.P5, c.DownKBps.P50, c.DownKBps.P99)
	fmt.Fprintf(w, "  input -> acknowledging snapshot: p50 %.1f ms, p99 %.1f ms (%d inputs)\n", c.LatencyMs.P50, c.LatencyMs.P99, c.LatencyMs.N)
	fmt.Fprintf(w, "  server (CPU %s): %.2f cores (tick work %.3f, tick p99 <= %g ms), RSS peak %.0f MiB, end %.0f MiB; inputs dropped %.0f, skipped %.0f in the window (%.0f, %.0f in all); mean snapshot %.0f B\n",
		r.ServerCPUs, s.Cores, s.TickWorkCores, s.TickP99BucketMs, s.PeakRSSMiB, s.EndRSSMiB, s.DroppedInputs, s.SkippedInputs,
		s.DroppedInputsTotal, s.SkippedInputsTotal, s.MeanSnapshotBytes)
	fmt.Fprintf(w, "  other work on the server's CPU %.2f cores, on the bots' %.2f; CPUs busy %v\n", r.Machine.OthersServerCPU, r.Machine.OthersBotCPU, r.Machine.CPUBusy)
	fmt.Fprintf(w, "  bots (CPU %s): %.2f cores; probes %d of %d ok, snapshots p50 %.1f Hz, ping p50 %.1f ms\n",
		r.BotCPUs, r.Bots.Cores, r.Probes.OK, r.Probes.Count, r.Probes.SnapshotHz.P50, r.Probes.RTTMs.P50)
	if r.Config.Fight {
		fmt.Fprintf(w, "  combat events: the map made %.0f/s; each probe got p50 %.0f/s, min %.0f/s; event ids missed %d\n",
			r.Server.EventsPerSec, r.Probes.EventsPerSec.P50, r.Probes.EventsPerSec.Min, r.Probes.EventGaps)
	}
	for _, e := range append(c.ErrorSamples, r.Probes.Problems...) {
		fmt.Fprintf(w, "  error: %s\n", e)
	}
	for _, warning := range r.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", warning)
	}
}
