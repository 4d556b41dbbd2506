// Command roomload measures Roomkeeper under load: it benchmarks one room
// server with pinned bots (bench) and soaks a running cluster with players
// while things break (soak). roomctl is the player's and operator's tool.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/roomkeeper/roomkeeper/internal/kubewatch"
)

const usage = `roomload: benchmark and soak Roomkeeper

  roomload bench [--players N] [--npcs M] [--spawn point|spread] [--duration D] [--warmup D] [--snapshot-rate R]
                 [--tick-rate R] [--codec json|binary] [--input-rate R] [--probes K] [--out FILE] (roomload bench -h)
  roomload soak  [--join-api URL] [--kubeconfig F] [--rooms N] [--bots P] [--duration D] [--rate R] [--chaos] (roomload soak -h)

bench starts bin/roomserver pinned to CPU 0 and runs the players on CPU 1,
all on 127.0.0.1, and appends one JSON line per run (docs/benchmarks.md).

soak runs rooms with players on a running cluster (make dev) for a while,
with --chaos breaking things on purpose, then checks from Postgres and the
API that nothing acknowledged was lost or doubled (docs/operations.md).
`

func main() {
	kubewatch.ListThenWatch()
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "roomload:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch {
	case len(args) == 0:
		fmt.Fprint(os.Stderr, usage)
		return errors.New("no command")
	case args[0] == "bench":
		return runBench(ctx, args[1:])
	case args[0] == "soak":
		return runSoak(ctx, args[1:])
	}
	fmt.Fprint(os.Stderr, usage)
	return fmt.Errorf("unknown command %q", args[0])
}
