#!/usr/bin/env bash
# The soak as a benchmark (docs/benchmarks.md): the whole local cluster
# (control plane, local node and its room servers, manager, Postgres) on
# CPU 0, `roomctl soak` and its players on CPU 1, every component's CPU and
# memory sampled every 5 s.
#
# Usage: hack/soak-bench.sh DIR [roomctl soak flags...]
#   e.g. hack/soak-bench.sh /tmp/soakbench --rooms 10 --bots 40 --rate 100 --duration 10m --chaos
# Needs `make build`. DIR holds the cluster (removed first). It prints the
# soak's summary, then per component the CPU in cores over the run and the
# peak resident memory (all its processes together).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 DIR [roomctl soak flags...]" >&2; exit 2; }
dir=$1
shift
root=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$dir" && mkdir -p "$dir" && chmod 755 "$dir"
go build -o "$dir/devcluster" "$root/hack/devcluster"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
join="127.0.0.1:$(free_port)"
# exec: $! is the dev cluster itself, whose SIGTERM stops all it runs.
(cd "$root" && exec taskset -c 0 "$dir/devcluster" --dir "$dir/dev" --join-api "$join" --metrics 0 --probes 0 \
  --pod-prefix 127.0.40. --gateway "127.0.0.1:$(free_port)" >"$dir/devcluster.log" 2>&1) &
cluster=$!
trap 'kill "$cluster" 2>/dev/null; wait "$cluster" 2>/dev/null || true' EXIT
for _ in $(seq 300); do
  grep -qs "Roomkeeper is running." "$dir/devcluster.log" && break
  kill -0 "$cluster" 2>/dev/null || { tail "$dir/devcluster.log" >&2; exit 1; }
  sleep 1
done

# component names a process by its command line.
component() {
  case "$1" in
    *bin/roomserver*) echo roomserver ;; *bin/manager*) echo manager ;;
    *kube-apiserver*) echo kube-apiserver ;; *etcd*) echo etcd ;;
    postgres*|*bin/postgres*) echo postgres ;; *bin/localnode*) echo localnode ;;
    *roomctl*) echo roomctl ;; *kube-scheduler*|*kube-controller-manager*|*devgateway*) echo control-other ;;
    *) echo "" ;;
  esac
}

# sample prints "component pid cputicks rsskb" for every process of a
# component: run nothing else of the kind meanwhile (no tests, no make dev).
sample() {
  for stat in /proc/[0-9]*/stat; do
    pid=${stat#/proc/}; pid=${pid%/stat}
    cmd=$( (tr '\0' ' ' <"/proc/$pid/cmdline") 2>/dev/null) || continue
    c=$(component "$cmd"); [ -n "$c" ] || continue
    { read -r -a f <"$stat"; } 2>/dev/null || continue
    rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null) || continue
    echo "$c $pid $((f[13] + f[14])) ${rss:-0}"
  done
}

(while kill -0 "$cluster" 2>/dev/null; do
  echo "T $(date +%s.%N)"; sample; sleep 5
done) >"$dir/samples" &
sampler=$!
start=$(date +%s.%N)
set +e
(cd "$root" && taskset -c 1 bin/roomctl soak --kubeconfig "$dir/dev/kubeconfig" --join-api "http://$join" \
  --postgres-dir "$dir/dev/pg" "$@")
rc=$?
set -e
end=$(date +%s.%N)
kill "$sampler" 2>/dev/null || true
hz=$(getconf CLK_TCK)
awk -v hz="$hz" -v wall="$(echo "$end - $start" | bc)" '
  $1 == "T" { n++; next }
  { key = $1 " " $2; if (!(key in first)) first[key] = $3; last[key] = $3; comp[key] = $1; rss[n, $1] += $4 }
  END {
    for (k in last) cpu[comp[k]] += (last[k] - first[k]) / hz
    for (i = 1; i <= n; i++) for (c in cpu) if (rss[i, c] > peak[c]) peak[c] = rss[i, c]
    printf "%-16s %8s %12s\n", "component", "cores", "peak RSS"
    for (c in cpu) printf "%-16s %8.2f %9.0f MiB\n", c, cpu[c] / wall, peak[c] / 1024
  }' "$dir/samples" | sort
exit $rc
