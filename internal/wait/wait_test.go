package wait

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestUntilReturnsOnceTheConditionHolds(t *testing.T) {
	checks := 0
	err := For(time.Minute, func() error {
		if checks++; checks < 5 {
			return errors.New("not yet")
		}
		return nil
	})
	if err != nil || checks != 5 {
		t.Fatalf("For = %v after %d checks, want nil after 5", err, checks)
	}
}

func TestUntilReturnsTheLastErrorWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	checks := 0
	err := Until(ctx, func() error { checks++; return fmt.Errorf("check %d", checks) })
	if err == nil || err.Error() != fmt.Sprintf("check %d", checks) || checks < 2 {
		t.Fatalf("Until = %v after %d checks, want the last check's error", err, checks)
	}
}

func TestUntilOnAnEndedContextSaysSo(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Until(ctx, func() error { return nil }); !errors.Is(err, ErrNeverChecked) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Until on an ended context = %v", err)
	}
}

// fakeT records a failure instead of ending the test.
type fakeT struct{ failed string }

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
}

func TestEventuallyFailsWithWhatAndWhy(t *testing.T) {
	var f fakeT
	Eventually(&f, 10*time.Millisecond, "the door to open", True(func() bool { return false }, "it is locked"))
	if !strings.Contains(f.failed, "the door to open") || !strings.Contains(f.failed, "it is locked") {
		t.Fatalf("failure %q, want what and why", f.failed)
	}
	var ok fakeT
	Eventually(&ok, time.Minute, "nothing", func() error { return nil })
	if ok.failed != "" {
		t.Fatalf("a condition that holds failed: %q", ok.failed)
	}
}
