// Package wait waits for a condition with a deadline: the one way the
// tests, the soak harness and the tools wait for something to become true,
// never a bare sleep (NATS's checkFor). The condition is checked at once,
// then after 1 ms, doubling to at most MaxInterval between checks: quick for
// what happens in-process, gentle on an API server polled for seconds.
package wait

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// MaxInterval is the longest wait between two checks of a condition.
const MaxInterval = 100 * time.Millisecond

// ErrNeverChecked is Until's answer when ctx had ended before the first
// check could say anything.
var ErrNeverChecked = errors.New("the condition was never checked")

// Until checks cond until it returns nil, and returns nil; when ctx ends
// first it returns cond's last error.
func Until(ctx context.Context, cond func() error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w: %w", ErrNeverChecked, ctx.Err())
	}
	timer := time.NewTimer(MaxInterval) // Reset below before every wait
	defer timer.Stop()
	for interval := time.Millisecond; ; interval = min(2*interval, MaxInterval) {
		err := cond()
		if err == nil {
			return nil
		}
		timer.Reset(interval)
		select {
		case <-ctx.Done():
			return err
		case <-timer.C:
		}
	}
}

// For is Until with a deadline within from now.
func For(within time.Duration, cond func() error) error {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	return Until(ctx, cond)
}

// BeforeDeadline is ctx ending reserve before its deadline, or ctx as it
// is without one: a wait that must leave time for what comes after it.
func BeforeDeadline(ctx context.Context, reserve time.Duration) (context.Context, context.CancelFunc) {
	if deadline, ok := ctx.Deadline(); ok {
		return context.WithDeadline(ctx, deadline.Add(-reserve))
	}
	return context.WithCancel(ctx)
}

// T is what Eventually needs of a test (*testing.T, *testing.B, testing.TB).
type T interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Eventually fails t unless cond returns nil within within; the failure
// says what was waited for and cond's last error.
func Eventually(t T, within time.Duration, what string, cond func() error) {
	t.Helper()
	if err := For(within, cond); err != nil {
		t.Fatalf("waiting %s for %s: %v", within, what, err)
	}
}

// True adapts a boolean condition: its error is why.
func True(cond func() bool, why string) func() error {
	return func() error {
		if cond() {
			return nil
		}
		return errors.New(why)
	}
}
