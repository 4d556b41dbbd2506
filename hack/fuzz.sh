#!/usr/bin/env bash
# Runs every fuzz target briefly (FUZZTIME, default 5s each), so `make test`
# exercises the decoders with generated input on every run. Longer runs:
#   FUZZTIME=10m hack/fuzz.sh
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-5s}
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
