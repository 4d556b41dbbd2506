package sim

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/roomkeeper/roomkeeper/internal/mapgen"
)

// TestDoRunsIfAndOnlyIfNil: a job that is still queued when its caller
// gives up never runs; one that started is waited for; nil means it ran.
func TestDoRunsIfAndOnlyIfNil(t *testing.T) {
	static, err := mapgen.Generate(mapgen.Config{Seed: 1, Width: 64, Height: 64})
	if err != nil {
		t.Fatal(err)
	}
	l := NewLoop(NewWorld(static, 30, Defaults()), LoopConfig{TickRate: 30, SnapshotRate: 10, CellSize: 64}, Hooks{})
	go l.Run()
	defer l.Stop()

	release := make(chan struct{})
	blocked := make(chan struct{})
	stall := make(chan error, 1)
	go func() {
		stall <- l.Do(context.Background(), func(*World) { close(blocked); <-release })
	}()
	<-blocked // the tick goroutine is stuck in the first job

	var ran atomic.Bool
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := l.Do(ctx, func(*World) { ran.Store(true) }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a job queued behind a stalled loop: error %v, want the deadline", err)
	}
	close(release)
	if err := <-stall; err != nil {
		t.Fatalf("the stalling job: %v", err)
	}
	// The next job runs after the abandoned one was skipped.
	if err := l.Do(context.Background(), func(*World) {}); err != nil {
		t.Fatal(err)
	}
	if ran.Load() {
		t.Fatal("a job abandoned by its caller ran later")
	}

	// A job that started is waited for, whatever its context says.
	started, proceed := make(chan struct{}), make(chan struct{})
	ctx2, cancel2 := context.WithCancel(context.Background())
	var done atomic.Bool
	go func() { <-started; cancel2(); close(proceed) }() // the caller gives up while the job runs
	if err := l.Do(ctx2, func(*World) { close(started); <-proceed; done.Store(true) }); err != nil || !done.Load() {
		t.Fatalf("a started job: error %v, ran to the end %v; want nil and true", err, done.Load())
	}
}
