//go:build !linux

package timerslack

import (
	"errors"
	"time"
)

func apply(time.Duration) error { return errors.New("only Linux has timer slack") }
