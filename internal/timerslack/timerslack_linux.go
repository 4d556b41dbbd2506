package timerslack

import (
	"errors"
	"os"
	"runtime"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func apply(slack time.Duration) error {
	// The thread that sets the slack must be the one that executes: the
	// new image's first thread is that thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	current, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil {
		return err
	}
	if time.Duration(current) == slack {
		return nil
	}
	if os.Getenv(reexecEnv) != "" {
		return errors.New("the kernel did not keep it across exec")
	}
	if err := unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(slack.Nanoseconds()), 0, 0, 0); err != nil {
		return err
	}
	// /proc/self/exe is this very image, even if its file was replaced.
	err = syscall.Exec("/proc/self/exe", os.Args, append(os.Environ(), reexecEnv+"=1"))
	// Still here: this image runs on, its threads as they were.
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 0, 0, 0, 0)
	return err
}
