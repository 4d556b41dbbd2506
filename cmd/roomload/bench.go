package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/mapgen"
	"github.com/roomkeeper/roomkeeper/internal/protocol"
	"github.com/roomkeeper/roomkeeper/internal/token"
)

// roomload bench: one room-server process pinned to one CPU, the bots in
// this process pinned to another, everything on 127.0.0.1. See
// docs/benchmarks.md, "Room server at scale".
const (
	// spreadSpawnPoints is --spawn spread: the most spawn points a map may have.
	spreadSpawnPoints = 64
	// benchSeed is the map's seed: equal runs build equal maps.
	benchSeed = 42
	// maxBenchPlayers bounds --players (the server's bound on connections
	// that have not said hello is 4,096).
	maxBenchPlayers = 4000
	// serverMessageLimit is the server's default per-client message rate
	// (docs/protocol.md): bots and probes must stay under it.
	serverMessageLimit = 60
	// pinnedEnv marks the roomload process that runs the bots under taskset,
	// so it does not pin itself again.
	pinnedEnv = "ROOMLOAD_BENCH_PINNED"
	// serverStartTimeout bounds the wait for the server's "Serving" line.
	serverStartTimeout = 30 * time.Second
	// botCPUWarning is the bots' CPU, in cores, above which the run warns
	// that the bots, not the server, may have set the client-side figures.
	botCPUWarning = 0.85
	// serverCPUWarning is the server CPU above which the run warns that the
	// server saturated its core.
	serverCPUWarning = 0.95
	// othersWarning is the CPU, in cores, that other work may take of the
	// server's or the bots' CPU before the run warns that it was not alone.
	othersWarning = 0.05
)

// benchConfig is one run, from the command line.
type benchConfig struct {
	players, npcs, probes             int
	spawn, codec, walk                string
	duration, warmup, waitIdle        time.Duration
	tickRate, snapshotRate, inputRate int
	mapSize, playerSpeed              int
	out, serverBin, label             string
	botProfile, serverProfile         string
	serverCPU, botCPU                 int
	serverFlags                       []string
	fight                             bool
}

// parseBenchFlags reads the command line of `roomload bench`.
func parseBenchFlags(args []string) (benchConfig, error) {
	var c benchConfig
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.IntVar(&c.players, "players", 200, "players connected, probes included")
	fs.IntVar(&c.npcs, "npcs", 0, "about this many NPCs: the map's npcDensity is set from its walkable cells")
	fs.StringVar(&c.spawn, "spawn", "point", "where players start: point (one spawn point, a crowd) or spread (64 points)")
	fs.DurationVar(&c.duration, "duration", 20*time.Second, "the measured window, after every bot connected and the warm-up")
	fs.DurationVar(&c.warmup, "warmup", 5*time.Second, "time between the last bot's welcome and the measured window")
	fs.IntVar(&c.snapshotRate, "snapshot-rate", 20, "snapshots per second to each client (the server's --snapshot-rate)")
	fs.IntVar(&c.tickRate, "tick-rate", 30, "simulation steps per second (the server's --tick-rate)")
	fs.StringVar(&c.codec, "codec", protocol.CodecBinary, "snapshot and input codec: json or binary")
	fs.IntVar(&c.inputRate, "input-rate", 0, "movement messages per second per player, each carrying the ticks since the last (default: the tick rate, one input per tick)")
	fs.IntVar(&c.probes, "probes", 2, "of the players, this many are full pkg/client clients that decode every snapshot")
	fs.StringVar(&c.out, "out", "", "append the JSON line to this file (default: stdout)")
	fs.StringVar(&c.walk, "walk", "stay", "how players move: stay (a random heading for a second, then back, so a crowd stays one) or wander (a new heading every second)")
	fs.BoolVar(&c.fight, "fight", false, "combat events: the map runs the arena content pack and every probe attacks its nearest dummy every tick (a dummy falls at one hit and stands up two ticks later); the run reports the events each probe got per second and the event ids it missed (lost, when everything happens in view)")
	fs.IntVar(&c.mapSize, "map-size", 512, "the map's width and height, world units")
	fs.IntVar(&c.playerSpeed, "player-speed", 0, "the map's playerSpeed, world units per second (0: the default, 48)")
	fs.StringVar(&c.serverBin, "server", filepath.Join("bin", "roomserver"), "the roomserver binary (make build)")
	fs.IntVar(&c.serverCPU, "server-cpu", 0, "CPU the server is pinned to with taskset, 0 unless set (-1: not pinned)")
	fs.IntVar(&c.botCPU, "bot-cpu", 1, "CPU the bots (this process) are pinned to with taskset (-1: not pinned)")
	fs.StringVar(&c.label, "label", "", "free text copied into the JSON line")
	fs.DurationVar(&c.waitIdle, "wait-idle", 0, "first wait up to this long for the machine to be idle (its CPUs less than 0.1 cores busy over a second), on a shared machine")
	fs.StringVar(&c.botProfile, "bot-profile", "", "write a CPU profile of the bots (this process) over the window to this file")
	fs.StringVar(&c.serverProfile, "server-profile", "", "write a CPU profile of the server over the window to this file (runs it with --pprof)")
	fs.Func("server-flag", "an extra roomserver flag, --name=value (repeatable)", func(v string) error {
		c.serverFlags = append(c.serverFlags, v)
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if c.inputRate == 0 {
		c.inputRate = c.tickRate
	}
	return c, c.validate()
}

// validate refuses a run the server or the harness cannot do as asked.
func (c benchConfig) validate() error {
	switch {
	case c.players < 1 || c.players > maxBenchPlayers:
		return fmt.Errorf("--players %d: want 1 to %d", c.players, maxBenchPlayers)
	case c.probes < 0 || c.probes > c.players:
		return fmt.Errorf("--probes %d: want 0 to --players (%d)", c.probes, c.players)
	case c.npcs < 0:
		return fmt.Errorf("--npcs %d: want >= 0", c.npcs)
	case c.spawn != "point" && c.spawn != "spread":
		return fmt.Errorf("--spawn %q: want point or spread", c.spawn)
	case c.codec != protocol.CodecBinary && c.codec != protocol.CodecJSON:
		return fmt.Errorf("--codec %q: want json or binary", c.codec)
	case c.fight && (c.probes < 1 || c.npcs < 1):
		return fmt.Errorf("--fight needs --probes >= 1 (they attack) and --npcs >= 1 (their targets)")
	case c.walk != "stay" && c.walk != "wander":
		return fmt.Errorf("--walk %q: want stay or wander", c.walk)
	case c.duration < time.Second || c.duration > time.Hour:
		return fmt.Errorf("--duration %s: want 1s to 1h", c.duration)
	case c.warmup < 0 || c.warmup > 10*time.Minute:
		return fmt.Errorf("--warmup %s: want 0 to 10m", c.warmup)
	case c.waitIdle < 0 || c.waitIdle > time.Hour:
		return fmt.Errorf("--wait-idle %s: want 0 to 1h", c.waitIdle)
	case c.tickRate < 1 || c.tickRate > 240:
		return fmt.Errorf("--tick-rate %d: want 1 to 240", c.tickRate)
	case c.snapshotRate < 1 || c.snapshotRate > c.tickRate:
		return fmt.Errorf("--snapshot-rate %d: want 1 to the tick rate (%d)", c.snapshotRate, c.tickRate)
	case c.inputRate < 1 || c.inputRate > c.tickRate:
		return fmt.Errorf("--input-rate %d: want 1 to the tick rate (%d): one input per tick at most", c.inputRate, c.tickRate)
	case c.fight && c.inputRate+c.tickRate >= serverMessageLimit:
		return fmt.Errorf("--fight: a probe sends an attack a tick and --input-rate inputs, %d a second with pings; the server allows %d: lower --input-rate", c.inputRate+c.tickRate+1, serverMessageLimit)
	case c.inputRate >= serverMessageLimit:
		return fmt.Errorf("--input-rate %d: the server allows %d messages a second per client, probes ping too", c.inputRate, serverMessageLimit)
	case maxInputsPerMessage(c.tickRate, c.inputRate) > protocol.MaxBinaryInputs:
		return fmt.Errorf("--input-rate %d: %d ticks per message, a binary input frame carries at most %d",
			c.inputRate, maxInputsPerMessage(c.tickRate, c.inputRate), protocol.MaxBinaryInputs)
	case c.mapSize < 32 || c.mapSize > 4096:
		return fmt.Errorf("--map-size %d: want 32 to 4096", c.mapSize)
	case c.playerSpeed < 0 || c.playerSpeed > mapgen.MaxPlayerSpeed:
		return fmt.Errorf("--player-speed %d: want 0 to %d", c.playerSpeed, mapgen.MaxPlayerSpeed)
	case c.serverCPU < -1 || c.botCPU < -1:
		return errors.New("--server-cpu and --bot-cpu: a CPU number, or -1 for not pinned")
	case c.serverCPU >= 0 && c.serverCPU == c.botCPU:
		return fmt.Errorf("--server-cpu and --bot-cpu are both %d: the point is to keep them apart", c.serverCPU)
	case c.serverBin == "":
		return errors.New("--server: the roomserver binary is required")
	}
	return nil
}

// spawnPoints is the server's --spawn-points for --spawn.
func (c benchConfig) spawnPoints() int {
	if c.spawn == "spread" {
		return spreadSpawnPoints
	}
	return 1
}

// inputsDue is how many inputs message number msg (from 0) carries so that
// inputRate messages a second carry tickRate inputs: one per tick, the
// remainder spread over the messages.
func inputsDue(msg, tickRate, inputRate int) int {
	return (msg+1)*tickRate/inputRate - msg*tickRate/inputRate
}

// maxInputsPerMessage is the most inputs one message carries.
func maxInputsPerMessage(tickRate, inputRate int) int {
	return (tickRate + inputRate - 1) / inputRate
}

// benchMapConfig is the map the server runs: a meadow of mapSize with
// npcDensity set for about npcs NPCs (density = NPCs / walkable cells, as
// internal/roomserver's crowd benchmark does).
func benchMapConfig(c benchConfig) (json.RawMessage, error) {
	cfg := mapgen.Config{Seed: benchSeed, Width: int32(c.mapSize), Height: int32(c.mapSize), PlayerSpeed: int32(c.playerSpeed)}
	if c.fight {
		cfg.Content = "arena"
	}
	if c.npcs > 0 {
		probe, err := mapgen.Generate(cfg)
		if err != nil {
			return nil, err
		}
		walkable := probe.WalkableCells()
		if c.npcs > walkable {
			return nil, fmt.Errorf("--npcs %d: a %d map has %d walkable cells, at most one NPC each", c.npcs, c.mapSize, walkable)
		}
		cfg.NPCDensity = math.Min(1, float64(c.npcs)/float64(walkable))
	}
	return json.Marshal(cfg)
}

// runBench is `roomload bench`: it pins itself to --bot-cpu (by running
// itself again under taskset), then runs the scenario and writes its line.
func runBench(ctx context.Context, args []string) error {
	cfg, err := parseBenchFlags(args)
	if err != nil {
		return err
	}
	if cfg.botCPU >= 0 && os.Getenv(pinnedEnv) == "" {
		return pinSelf(cfg.botCPU, args) // returns only on failure
	}
	res, err := bench(ctx, cfg, os.Stderr)
	if err != nil {
		return err
	}
	if err := writeResult(cfg.out, os.Stdout, res); err != nil {
		return err
	}
	printSummary(os.Stderr, res)
	return nil
}

// writeResult appends the run's JSON line to path, or writes it to stdout.
func writeResult(path string, stdout io.Writer, res benchResult) error {
	line, err := json.Marshal(res)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	if path == "" {
		_, err = stdout.Write(line)
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(line); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// bench runs one scenario: it starts the server, connects the players,
// waits out the warm-up, measures the window, and stops everything, also
// when it fails or ctx ends. progress gets a line per phase.
func bench(ctx context.Context, cfg benchConfig, progress io.Writer) (benchResult, error) {
	if !benchSupported {
		return benchResult{}, errors.New("roomload bench needs Linux (taskset, /proc)")
	}
	work, err := os.MkdirTemp("", "roomload-bench-")
	if err != nil {
		return benchResult{}, err
	}
	defer func() { _ = os.RemoveAll(work) }()
	key, err := token.NewKey()
	if err != nil {
		return benchResult{}, err
	}
	keys := token.KeySet{Current: key}
	if err := keys.WriteDir(work); err != nil {
		return benchResult{}, err
	}
	mapConfig, err := benchMapConfig(cfg)
	if err != nil {
		return benchResult{}, err
	}
	if err := waitIdle(ctx, cfg.waitIdle, progress); err != nil {
		return benchResult{}, err
	}
	srv, err := startBenchServer(ctx, cfg, work, mapConfig)
	if err != nil {
		return benchResult{}, err
	}
	defer srv.stop()
	before, err := scrapeMetrics(ctx, srv.http)
	if err != nil {
		return benchResult{}, err
	}
	fmt.Fprintf(progress, "bench: server pid %d on %s, %.0f entities before any player; connecting %d players\n",
		srv.pid(), srv.game, before.get("roomkeeper_roomserver_entities"), cfg.players)

	f := newFleet(cfg, "ws://"+srv.game+"/ws", token.NewSigner(token.StaticKeys(keys), time.Now))
	defer f.stop()
	connectStart := time.Now()
	if err := f.connect(ctx); err != nil {
		return benchResult{}, err
	}
	connectTime := time.Since(connectStart)
	fmt.Fprintf(progress, "bench: %d connected in %s (%d failed); warming up %s, then measuring %s\n",
		f.connected(), connectTime.Round(time.Millisecond), cfg.players-f.connected(), cfg.warmup, cfg.duration)
	if err := sleepCtx(ctx, cfg.warmup); err != nil {
		return benchResult{}, err
	}
	start, err := takeSample(ctx, srv)
	if err != nil {
		return benchResult{}, err
	}
	stopProfile, err := startProfile(cfg.botProfile)
	if err != nil {
		return benchResult{}, err
	}
	serverProfile := srv.profile(ctx, cfg.serverProfile, cfg.duration)
	f.startWindow()
	err = sleepCtx(ctx, cfg.duration)
	f.endWindow()
	err = cmpErr(err, stopProfile(), <-serverProfile)
	if err != nil {
		return benchResult{}, err
	}
	end, err := takeSample(ctx, srv)
	if err != nil {
		return benchResult{}, err
	}
	f.stop()
	srv.stop()
	res := summarize(cfg, f, before, start, end)
	res.ConnectSeconds = connectTime.Seconds()
	res.ServerCPUs, res.BotCPUs = srv.cpus, selfCPUs()
	res.BotGOMAXPROCS = runtime.GOMAXPROCS(0)
	res.warn()
	return res, nil
}

// idleBusy is the machine's CPU use, in cores, under which --wait-idle
// takes it as idle.
const idleBusy = 0.1

// waitIdle waits until the machine's CPUs, all together, were less than
// idleBusy cores busy over a second, for at most limit; then it runs
// anyway, and the result's machine figures show what else ran.
func waitIdle(ctx context.Context, limit time.Duration, progress io.Writer) error {
	if limit <= 0 {
		return nil
	}
	deadline := time.Now().Add(limit)
	for waited := 0; ; waited++ {
		before, err := os.ReadFile("/proc/stat")
		if err != nil {
			return err
		}
		if err := sleepCtx(ctx, time.Second); err != nil {
			return err
		}
		after, err := os.ReadFile("/proc/stat")
		if err != nil {
			return err
		}
		busy := 0.0
		start := parseCPUTicks(before)
		for cpu, t := range parseCPUTicks(after) {
			busy += float64(t.busy-start[cpu].busy) / userHZ
		}
		switch {
		case busy < idleBusy:
			return nil
		case time.Now().After(deadline):
			fmt.Fprintf(progress, "bench: the machine is still busy (%.2f cores) after %s: running anyway\n", busy, limit)
			return nil
		case waited%30 == 0:
			fmt.Fprintf(progress, "bench: waiting for the machine to be idle (%.2f cores busy)\n", busy)
		}
	}
}

// startProfile starts a CPU profile into path (nothing without one) and
// returns what stops it.
func startProfile(path string) (func() error, error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}

// sleepCtx waits d, or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("interrupted: %w", ctx.Err())
	case <-t.C:
		return nil
	}
}
