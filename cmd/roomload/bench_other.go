//go:build !linux

package main

import (
	"errors"
	"syscall"
	"time"
)

// benchSupported: roomload bench reads /proc and pins with taskset, Linux only.
const benchSupported = false

func pinSelf(int, []string) error { return errors.New("roomload bench needs Linux") }

func serverProcAttr() *syscall.SysProcAttr { return nil }

func selfCPUTime() time.Duration { return 0 }
