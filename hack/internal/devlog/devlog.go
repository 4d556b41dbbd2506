// Package devlog is the log format of the development tools under hack/
// (the local node, the development gateway): one line per call, with a
// timestamp, on a writer.
package devlog

import (
	"fmt"
	"io"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
)

// New writes one line per log call to w.
func New(w io.Writer) logr.Logger {
	return funcr.New(func(prefix, args string) {
		if prefix != "" {
			fmt.Fprintln(w, prefix, args)
			return
		}
		fmt.Fprintln(w, args)
	}, funcr.Options{LogTimestamp: true})
}
