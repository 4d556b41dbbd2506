// Package timerslack lets every thread of a process wake from its timers
// and sleeps a little late, so that the kernel can serve several wake-ups
// with one.
//
// A room server is mostly asleep: it wakes for its tick, for its players'
// messages and for its database, and each wake-up costs more than the
// work it wakes for (docs/benchmarks.md, "Density"). The Go runtime's
// monitor thread (sysmon) multiplies them: once the process has work, it
// polls every 20 microseconds until the process is idle again, and a
// system call wakes it from its sleep. A millisecond of slack lets the
// kernel fold those polls into the wake-ups around them.
//
// A thread's slack is the slack of the thread that created it, and the
// runtime creates its monitor before main runs, so the only way an
// unprivileged process gives every thread the slack is to set it on the
// calling thread and execute itself again: the new image's threads are
// all born of that thread, and the process keeps its PID, its arguments,
// its environment and its open standard streams.
package timerslack

import (
	"fmt"
	"time"
)

// reexecEnv marks the image Apply executed, so that a kernel that did not
// keep the slack across exec is reported rather than exec'ed again.
const reexecEnv = "ROOMKEEPER_TIMER_SLACK_REEXEC"

// Apply gives every thread of the process slack: with slack zero or the
// slack already in place it returns nil at once; otherwise it sets the
// slack and executes the program again, and returns only if that fails.
// The process runs on, with the kernel's default slack, after an error.
func Apply(slack time.Duration) error {
	if slack <= 0 {
		return nil
	}
	if err := apply(slack); err != nil {
		return fmt.Errorf("timer slack %v: %w", slack, err)
	}
	return nil
}
