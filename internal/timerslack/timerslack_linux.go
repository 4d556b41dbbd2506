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
	err = syscall.Exec(executable(), os.Args, append(os.Environ(), reexecEnv+"=1"))
	// Still here: this image runs on, its threads as they were.
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 0, 0, 0, 0)
	return err
}

// executable is the path to execute again: the program's own path, whose
// base name the kernel makes the process's name (what ps, top and pgrep
// show), while that file is still the running image. Once the file was
// removed or replaced it is /proc/self/exe: the running image still, under
// the name "exe". (os.Executable would not do: it drops the link's
// " (deleted)" and would name a replacement.)
func executable() string {
	const self = "/proc/self/exe"
	path, err := os.Readlink(self)
	if err != nil {
		return self
	}
	running, err := os.Stat(self)
	if err != nil {
		return self
	}
	if named, err := os.Stat(path); err != nil || !os.SameFile(running, named) {
		return self
	}
	return path
}
