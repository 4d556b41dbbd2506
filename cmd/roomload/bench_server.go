package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/podenv"
	"github.com/roomkeeper/roomkeeper/internal/serverlog"
)

const (
	// userHZ is the unit of the CPU times in /proc/<pid>/stat
	// (sysconf(_SC_CLK_TCK)): 100 on every architecture Go runs Linux on.
	userHZ = 100
	// logTailLines is how much of the server's log a failure quotes.
	logTailLines = 20
	// scrapeTimeout bounds one read of the server's /metrics.
	scrapeTimeout = 5 * time.Second
	// maxMetricsBytes bounds the /metrics body read.
	maxMetricsBytes = 8 << 20
)

// benchServer is the roomserver process of a run.
type benchServer struct {
	cmd        *exec.Cmd
	game, http string
	cpus       string // the CPUs it may run on, from /proc
	exited     chan struct{}
	stopOnce   sync.Once
	log        *serverlog.Tail // its last log lines
}

// startBenchServer starts bin/roomserver standalone on loopback (no
// database: guests only, as hack/bench-room.sh runs it), under taskset
// when --server-cpu is set, and waits until it serves.
func startBenchServer(ctx context.Context, cfg benchConfig, keyDir string, mapConfig json.RawMessage) (*benchServer, error) {
	if _, err := os.Stat(cfg.serverBin); err != nil {
		return nil, fmt.Errorf("the roomserver binary: %w (make build, or --server PATH)", err)
	}
	args := []string{
		"--" + podenv.FlagRoom + "=bench", "--" + podenv.FlagMap + "=town", "--" + podenv.FlagInstance + "=" + benchInstance,
		"--" + podenv.FlagKeyDir + "=" + keyDir,
		"--" + podenv.FlagListen + "=127.0.0.1:0", "--" + podenv.FlagHTTPListen + "=127.0.0.1:0",
		"--" + podenv.FlagTickRate + "=" + strconv.Itoa(cfg.tickRate),
		"--" + podenv.FlagSnapshotRate + "=" + strconv.Itoa(cfg.snapshotRate),
		"--" + podenv.FlagMaxPlayers + "=" + strconv.Itoa(cfg.players+10),
		"--spawn-points=" + strconv.Itoa(cfg.spawnPoints()),
	}
	if cfg.serverProfile != "" {
		args = append(args, "--pprof")
	}
	args = append(args, cfg.serverFlags...)
	name := cfg.serverBin
	if cfg.serverCPU >= 0 {
		var err error
		if name, err = exec.LookPath("taskset"); err != nil {
			return nil, fmt.Errorf("pinning the server: %w (taskset is in util-linux; --server-cpu=-1 runs it unpinned)", err)
		}
		args = append([]string{"-c", strconv.Itoa(cfg.serverCPU), cfg.serverBin}, args...)
	}
	cmd := exec.Command(name, args...) // killed by stop, not by ctx: stop also waits
	cmd.Env = serverEnv(os.Environ(), mapConfig)
	cmd.SysProcAttr = serverProcAttr()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	s := &benchServer{cmd: cmd, exited: make(chan struct{}), log: serverlog.NewTail(logTailLines)}
	serving := make(chan serverlog.Addrs, 1)
	go s.readLog(stderr, serving)
	timer := time.NewTimer(serverStartTimeout)
	defer timer.Stop()
	select {
	case addrs := <-serving:
		s.game, s.http = addrs.Game, addrs.HTTP
	case <-s.exited:
		return nil, fmt.Errorf("the roomserver exited before serving: %s\n%s", cmd.ProcessState, s.logTail())
	case <-timer.C:
		s.stop()
		return nil, fmt.Errorf("the roomserver did not serve within %s:\n%s", serverStartTimeout, s.logTail())
	case <-ctx.Done():
		s.stop()
		return nil, ctx.Err()
	}
	if status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.pid())); err == nil {
		_, _, s.cpus, _ = parseProcStatus(status)
	}
	return s, nil
}

// benchInstance is the MapInstance name tickets are minted for.
const benchInstance = "bench-town"

// serverEnv is roomload's environment without what would make the server
// more than a standalone map (a database, a pod identity), plus the map.
func serverEnv(environ []string, mapConfig json.RawMessage) []string {
	drop := []string{podenv.EnvMapConfig, podenv.EnvDatabaseURL, podenv.EnvPodName, podenv.EnvPodNamespace, podenv.EnvPodIP, pinnedEnv}
	env := slices.DeleteFunc(slices.Clone(environ), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains(drop, name)
	})
	return append(env, podenv.EnvMapConfig+"="+string(mapConfig))
}

// readLog follows the server's log and reaps the process once it ends.
func (s *benchServer) readLog(stderr io.Reader, serving chan<- serverlog.Addrs) {
	s.log.Follow(stderr, serving)
	_ = s.cmd.Wait()
	close(s.exited)
}

func (s *benchServer) logTail() string { return s.log.String() }

func (s *benchServer) pid() int { return s.cmd.Process.Pid }

// stop kills the server and waits until it is gone. It is idempotent.
func (s *benchServer) stop() {
	s.stopOnce.Do(func() {
		_ = s.cmd.Process.Kill()
		<-s.exited // the kill ends its log, which readLog reaps
	})
}

// profile fetches a CPU profile of the server over the next d (whole
// seconds, at least one) into path, in the background; the channel gets
// its outcome. Without a path it does nothing.
func (s *benchServer) profile(ctx context.Context, path string, d time.Duration) <-chan error {
	done := make(chan error, 1)
	if path == "" {
		done <- nil
		return done
	}
	seconds := max(1, int(d/time.Second))
	go func() {
		ctx, cancel := context.WithTimeout(ctx, time.Duration(seconds)*time.Second+scrapeTimeout)
		defer cancel()
		url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", s.http, seconds)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			done <- err
			return
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- fmt.Errorf("profiling the server: %w", err)
			return
		}
		defer func() { _ = resp.Body.Close() }()
		if resp.StatusCode != http.StatusOK {
			done <- fmt.Errorf("profiling the server: HTTP %d", resp.StatusCode)
			return
		}
		f, err := os.Create(path)
		if err != nil {
			done <- err
			return
		}
		_, err = io.Copy(f, resp.Body)
		done <- cmpErr(err, f.Close())
	}()
	return done
}

// alive reports whether the server is still running.
func (s *benchServer) alive() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// sample is what the run reads at either end of the measured window.
type sample struct {
	at                 time.Time
	serverCPU, botCPU  time.Duration
	rssKiB, peakRSSKiB int64
	metrics            promMetrics
	// cpus is the machine's time per CPU.
	cpus map[string]cpuTicks
}

// takeSample reads the server's and this process's CPU time, the server's
// memory and its metrics.
func takeSample(ctx context.Context, s *benchServer) (sample, error) {
	if !s.alive() {
		return sample{}, fmt.Errorf("the roomserver exited during the run: %s\n%s", s.cmd.ProcessState, s.logTail())
	}
	var smp sample
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.pid()))
	if err != nil {
		return smp, err
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.pid()))
	if err != nil {
		return smp, err
	}
	smp.at, smp.botCPU = time.Now(), selfCPUTime()
	if machine, err := os.ReadFile("/proc/stat"); err == nil {
		smp.cpus = parseCPUTicks(machine)
	}
	ticks, err := parseProcStatCPU(stat)
	if err != nil {
		return smp, err
	}
	smp.serverCPU = time.Duration(ticks) * time.Second / userHZ
	if smp.rssKiB, smp.peakRSSKiB, _, err = parseProcStatus(status); err != nil {
		return smp, err
	}
	smp.metrics, err = scrapeMetrics(ctx, s.http)
	return smp, err
}

// cpuTicks is one CPU's time from /proc/stat, in clock ticks: busy (user,
// nice, system, irq, softirq) and stolen by the hypervisor.
type cpuTicks struct{ busy, steal uint64 }

// parseCPUTicks reads the per-CPU lines (cpu0, cpu1, ...) of /proc/stat.
func parseCPUTicks(stat []byte) map[string]cpuTicks {
	cpus := map[string]cpuTicks{}
	for line := range strings.Lines(string(stat)) {
		fields := strings.Fields(line)
		if len(fields) < 9 || !strings.HasPrefix(fields[0], "cpu") || fields[0] == "cpu" {
			continue
		}
		var v [9]uint64
		for i := 1; i < 9; i++ {
			v[i], _ = strconv.ParseUint(fields[i], 10, 64)
		}
		const user, nice, system, irq, softirq, steal = 1, 2, 3, 6, 7, 8
		cpus[fields[0]] = cpuTicks{busy: v[user] + v[nice] + v[system] + v[irq] + v[softirq], steal: v[steal]}
	}
	return cpus
}

// parseProcStatCPU is utime + stime, in clock ticks, from /proc/<pid>/stat.
func parseProcStatCPU(stat []byte) (uint64, error) {
	// The command name (field 2) is in parentheses and may hold spaces
	// and parentheses itself; the fields after its last ')' start at 3.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("/proc stat: no command name")
	}
	fields := strings.Fields(string(stat[i+1:]))
	const utime, stime = 14 - 3, 15 - 3
	if len(fields) <= stime {
		return 0, fmt.Errorf("/proc stat: %d fields after the name, want more than %d", len(fields), stime)
	}
	u, err := strconv.ParseUint(fields[utime], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("/proc stat utime: %w", err)
	}
	s, err := strconv.ParseUint(fields[stime], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("/proc stat stime: %w", err)
	}
	return u + s, nil
}

// parseProcStatus reads VmRSS and VmHWM (KiB) and Cpus_allowed_list from
// /proc/<pid>/status.
func parseProcStatus(status []byte) (rssKiB, peakKiB int64, cpus string, err error) {
	found := 0
	for line := range strings.Lines(string(status)) {
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		value = strings.TrimSpace(value)
		switch name {
		case "VmRSS", "VmHWM":
			n, perr := strconv.ParseInt(strings.TrimSuffix(value, " kB"), 10, 64)
			if perr != nil {
				return 0, 0, "", fmt.Errorf("/proc status %s: %w", name, perr)
			}
			if name == "VmRSS" {
				rssKiB = n
			} else {
				peakKiB = n
			}
			found++
		case "Cpus_allowed_list":
			cpus = value
		}
	}
	if found != 2 {
		return 0, 0, "", errors.New("/proc status: no VmRSS or VmHWM")
	}
	return rssKiB, peakKiB, cpus, nil
}

// selfCPUs is the CPUs this process may run on.
func selfCPUs() string {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return ""
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// promMetrics is one scrape of a Prometheus text page: series (name with
// its labels, as written) to value.
type promMetrics map[string]float64

// scrapeMetrics reads http://addr/metrics.
func scrapeMetrics(ctx context.Context, addr string) (promMetrics, error) {
	ctx, cancel := context.WithTimeout(ctx, scrapeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reading the server's metrics: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("reading the server's metrics: HTTP %d", resp.StatusCode)
	}
	return parseMetrics(io.LimitReader(resp.Body, maxMetricsBytes))
}

// parseMetrics reads the Prometheus text format (without timestamps, as
// client_golang writes it).
func parseMetrics(r io.Reader) (promMetrics, error) {
	m := promMetrics{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			return nil, fmt.Errorf("metrics: no value in %q", line)
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("metrics: %q: %w", line, err)
		}
		m[line[:i]] = v
	}
	return m, sc.Err()
}

// get is one series' value, 0 when absent.
func (m promMetrics) get(series string) float64 { return m[series] }

// tickHistogram is the server's histogram of tick work.
const tickHistogram = "roomkeeper_roomserver_tick_duration_seconds"

// tickQuantile is the upper bound of the tick-duration bucket holding
// quantile q of the ticks between two scrapes: "p99 <= this". It is +Inf
// when q falls past the last finite bucket and NaN without ticks.
func tickQuantile(before, after promMetrics, q float64) float64 {
	type bucket struct{ le, n float64 }
	var buckets []bucket
	prefix := tickHistogram + "_bucket{"
	for series, v := range after {
		if !strings.HasPrefix(series, prefix) {
			continue
		}
		_, le, ok := strings.Cut(series, `le="`)
		if !ok {
			continue
		}
		bound, err := strconv.ParseFloat(strings.TrimSuffix(le, `"}`), 64)
		if err != nil {
			continue
		}
		buckets = append(buckets, bucket{bound, v - before[series]})
	}
	slices.SortFunc(buckets, func(a, b bucket) int {
		switch {
		case a.le < b.le:
			return -1
		case a.le > b.le:
			return 1
		}
		return 0
	})
	if len(buckets) == 0 || buckets[len(buckets)-1].n <= 0 {
		return math.NaN()
	}
	total := buckets[len(buckets)-1].n
	for _, b := range buckets {
		if b.n >= q*total {
			return b.le
		}
	}
	return math.Inf(1)
}
