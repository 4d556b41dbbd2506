package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lib/pq"
)

// Benchmarks for the budgets of docs/design.md section 8 (checkpoint 1,000 dirty
// characters: p50 <= 50 ms, p99 <= 150 ms; critical action durable ack:
// p50 <= 3 ms, p99 <= 20 ms, >= 1,000/s per pod). Percentiles need
// samples: run with e.g. -benchtime=200x.

func BenchmarkSaveStates1000(b *testing.B) { benchmarkSaveStates(b, 1000) }
func BenchmarkSaveStates5000(b *testing.B) { benchmarkSaveStates(b, 5000) }

// benchmarkSaveStates checkpoints n characters per iteration, all dirty,
// each with a new revision and a changed ~300-byte payload. The first
// 16 batches run before the clock starts: they insert each character's
// state row, and every later batch updates it in place (and appends to
// checkpoint_history), as checkpoints in a running room do.
func benchmarkSaveStates(b *testing.B, n int) {
	s := newStore(b)
	ctx := context.Background()
	batch := benchCharacters(b, s, n)
	rev := int64(0)
	checkpoint := func() time.Duration {
		rev++
		for i := range batch {
			binary.LittleEndian.PutUint64(batch[i].Payload, uint64(rev)) // the state changed
			batch[i].Revision = rev
			batch[i].StateHash = ""
		}
		start := time.Now()
		res, err := s.SaveStates(ctx, "bench-1", batch)
		took := time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		if res.Saved != n {
			b.Fatalf("saved %d of %d", res.Saved, n)
		}
		return took
	}
	for range 16 {
		checkpoint()
	}
	var took []time.Duration
	b.ReportAllocs()
	for b.Loop() {
		took = append(took, checkpoint())
	}
	reportPercentiles(b, took)
	reportRowBytes(b, s, "checkpoint_history")
}

// benchCharacters creates n characters in one statement and returns a
// state for each with a random 300-byte payload.
func benchCharacters(b *testing.B, s *Postgres, n int) []CharacterState {
	b.Helper()
	ids := make([]string, n)
	batch := make([]CharacterState, n)
	for i := range batch {
		ids[i] = fmt.Sprintf("bench-%05d", i)
		payload := make([]byte, 300)
		for j := range payload {
			payload[j] = byte(rand.N(256))
		}
		batch[i] = CharacterState{CharacterID: ids[i], SchemaVersion: 1, SimCoreVersion: "bench", Payload: payload}
	}
	if _, err := s.DB().ExecContext(testCtx(b),
		`INSERT INTO characters (id, user_id) SELECT id, 'bench' FROM unnest($1::text[]) AS id`, pq.Array(ids)); err != nil {
		b.Fatal(err)
	}
	// One lease epoch for the whole batch: the fence only compares.
	if _, err := s.DB().ExecContext(testCtx(b), `INSERT INTO character_authority (character_id, map_instance, pod, epoch, expires_at)
SELECT id, 'bench-1', 'pod', 1, now() + interval '1 day' FROM unnest($1::text[]) AS id`, pq.Array(ids)); err != nil {
		b.Fatal(err)
	}
	for i := range batch {
		batch[i].Epoch = 1
	}
	return batch
}

// BenchmarkCommitCritical is one player's critical actions back to back:
// pick an item up from the map, drop it again (the insert and update paths
// of the ownership row, a new event each time), each alone. Besides
// latency it reports Postgres' CPU per action.
func BenchmarkCommitCritical(b *testing.B) {
	s := newStore(b)
	ctx := context.Background()
	var took []time.Duration
	epoch := withLease(b, s, CriticalEvent{CharacterID: "seq", MapInstance: "bench-1"}).Epoch
	b.ReportAllocs()
	cpu := postgresCPU(b)
	for i := 0; b.Loop(); i++ {
		e, m := benchAction("seq", i)
		e.Epoch = epoch
		start := time.Now()
		if err := s.CommitCritical(ctx, e, m); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
	}
	b.ReportMetric(float64((postgresCPU(b)-cpu).Microseconds())/float64(max(1, len(took))), "pg-cpu-us/op")
	reportPercentiles(b, took)
	reportRowBytes(b, s, "critical_events")
}

// reportRowBytes adds the disk a row of table takes, indexes and all.
func reportRowBytes(b *testing.B, s *Postgres, table string) {
	var bytes, rows int64
	if err := s.DB().QueryRowContext(context.Background(),
		fmt.Sprintf(`SELECT pg_total_relation_size('%s'), count(*) FROM %s`, table, table)).Scan(&bytes, &rows); err != nil {
		b.Fatal(err)
	}
	if rows > 0 {
		b.ReportMetric(float64(bytes)/float64(rows), table+"-B/row")
	}
}

// BenchmarkCommitCriticalParallel is many players of one pod at once, each
// picking up and dropping their own items, and reports throughput and
// Postgres' CPU per action.
func BenchmarkCommitCriticalParallel(b *testing.B) {
	s := newStore(b)
	benchmarkCommitParallel(b, s, s.CommitCritical)
}

// BenchmarkCommitCriticalGrouped is the same, through group commit
// (CriticalGroups), as a map pod commits them.
func BenchmarkCommitCriticalGrouped(b *testing.B) {
	s := newStore(b)
	groups := NewCriticalGroups(s, GroupOptions{})
	defer groups.Close()
	benchmarkCommitParallel(b, s, groups.CommitCritical)
}

func benchmarkCommitParallel(b *testing.B, s *Postgres, commit func(context.Context, CriticalEvent, ...Move) error) {
	ctx := context.Background()
	const players = 16
	var (
		player atomic.Int64
		mu     sync.Mutex
		took   []time.Duration
		warm   sync.WaitGroup
		begin  sync.Once
		cpu    time.Duration
		start  time.Time
	)
	// Every player takes its lease and commits a first action before the
	// window opens: what is measured is a pod's steady state, not the
	// pool's connections starting.
	warm.Add(players)
	b.SetParallelism(players / runtime.GOMAXPROCS(0))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		me := fmt.Sprint("par", player.Add(1))
		epoch := withLease(b, s, CriticalEvent{CharacterID: me, MapInstance: "bench-1"}).Epoch
		i := 0
		warmUp, m := benchAction(me, i)
		warmUp.Epoch = epoch
		if err := commit(ctx, warmUp, m); err != nil {
			b.Error(err)
		}
		warm.Done()
		warm.Wait()
		begin.Do(func() { cpu, start = postgresCPU(b), time.Now() })
		var mine []time.Duration
		for i = 1; pb.Next(); i++ {
			e, m := benchAction(me, i)
			e.Epoch = epoch
			at := time.Now()
			if err := commit(ctx, e, m); err != nil {
				b.Error(err)
				return
			}
			mine = append(mine, time.Since(at))
		}
		mu.Lock()
		took = append(took, mine...)
		mu.Unlock()
	})
	b.ReportMetric(float64(len(took))/time.Since(start).Seconds(), "ops/s")
	b.ReportMetric(float64((postgresCPU(b)-cpu).Microseconds())/float64(max(1, len(took))), "pg-cpu-us/op")
	reportPercentiles(b, took)
}

// benchAction is player's action i: even ones pick item i/2 up from the
// map, odd ones drop it back.
func benchAction(player string, i int) (CriticalEvent, Move) {
	item := fmt.Sprintf("%s-item-%d", player, i/2)
	eventID := fmt.Sprintf("%s-%d", player, i)
	if i%2 == 0 {
		return pickup(eventID, player, "bench-1", item)
	}
	return drop(eventID, player, "bench-1", item, 1, 2)
}

// reportPercentiles adds p50 and p99 of the samples, in milliseconds.
func reportPercentiles(b *testing.B, took []time.Duration) {
	if len(took) == 0 {
		return
	}
	slices.Sort(took)
	at := func(p int) float64 {
		return float64(took[min(len(took)-1, len(took)*p/100)]) / float64(time.Millisecond)
	}
	b.ReportMetric(at(50), "p50-ms")
	b.ReportMetric(at(99), "p99-ms")
}

// BenchmarkAppendEvents is a map's event log at seed 004's rate: a batch
// of 500 events (half a second at 1,000 a second) per statement. Besides
// time it reports the server's CPU per event (the postmaster's children,
// from /proc) and the disk each event takes, partition and all, for the
// sizing in docs/operations.md ("Data retention").
func BenchmarkAppendEvents(b *testing.B) {
	s := newStore(b)
	ctx := context.Background()
	batch := make([]LoggedEvent, 500)
	for i := range batch {
		batch[i] = LoggedEvent{MapInstance: "demo-town", Tick: int64(i), Type: "hit", Entity: 1000 + int64(i%40),
			By: int64(i % 7), ByCharacter: "c-5f0e8d1a2b3c4d5e", Amount: 7, X: 123.5, Y: 456.25}
	}
	now := time.Now()
	if err := s.EnsureEventLogPartitions(ctx, now, now.Add(time.Hour)); err != nil {
		b.Fatal(err)
	}
	cpu := postgresCPU(b)
	seq := int64(0)
	b.ReportAllocs()
	for b.Loop() {
		for i := range batch {
			seq++
			batch[i].At, batch[i].Seq = now, seq
		}
		if err := s.AppendEvents(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	events := float64(b.N * len(batch))
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/events, "ns/event")
	b.ReportMetric(float64((postgresCPU(b)-cpu).Microseconds())/events, "pg-cpu-us/event")
	var bytes int64
	if err := s.DB().QueryRowContext(ctx, `SELECT sum(pg_total_relation_size(relid)) FROM pg_partition_tree('event_log')`).Scan(&bytes); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(bytes)/events, "disk-B/event")
}

// postgresCPU is the CPU time the test server's processes have used: the
// postmaster's and its children's (the backends), from /proc.
func postgresCPU(b *testing.B) time.Duration {
	b.Helper()
	raw, err := os.ReadFile(filepath.Join(pg.Dir(), "data", "postmaster.pid"))
	if err != nil {
		b.Fatal(err)
	}
	postmaster, _, _ := strings.Cut(string(raw), "\n")
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	var ticks int64
	for _, p := range procs {
		stat, err := os.ReadFile(p)
		if err != nil {
			continue // gone meanwhile
		}
		// Fields after the command's closing parenthesis: state ppid ... utime(14) stime(15).
		_, rest, _ := strings.Cut(string(stat), ") ")
		f := strings.Fields(rest)
		pid := strings.TrimSuffix(filepath.Base(filepath.Dir(p)), "/")
		if len(f) < 13 || (f[1] != postmaster && pid != postmaster) {
			continue
		}
		utime, _ := strconv.ParseInt(f[11], 10, 64)
		stime, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += utime + stime
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ
}
