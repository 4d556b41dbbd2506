#!/usr/bin/env bash
# Runs every fuzz target briefly (FUZZTIME, default 50000x: executions, a
# few seconds each), so `make test` exercises the decoders with generated
# input on every run. Longer runs:
#   FUZZTIME=2000000x hack/fuzz.sh
# Budgets are execution counts, not durations: on Go 1.26 a duration can
# end the run with a spurious "context deadline exceeded" when a worker is
# mid-call at the deadline (golang/go#75804, fixed in Go 1.27).
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-50000x}
for dir in $(git grep -l '^func Fuzz' -- '*_test.go' | xargs -n1 dirname | sort -u); do
  pkg=./$dir
  for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go | cut -d' ' -f2); do
    echo "fuzz $pkg $target ($fuzztime)"
    go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg" >/tmp/roomkeeper-fuzz.log 2>&1 || {
      cat /tmp/roomkeeper-fuzz.log
      exit 1
    }
  done
done
