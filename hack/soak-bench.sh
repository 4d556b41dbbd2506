#!/usr/bin/env bash
# The soak as a benchmark (docs/benchmarks.md): the whole local cluster
# (control plane, local node and its room servers, manager, Postgres) on
# CPU 0, `roomload soak` and its players on CPU 1, every component's CPU and
# memory sampled every 5 s.
#
# Usage: hack/soak-bench.sh DIR [roomload soak flags...]
#   e.g. hack/soak-bench.sh /tmp/soakbench --rooms 10 --bots 40 --rate 100 --duration 10m --chaos
# Needs `make build`. DIR holds the cluster (removed first). It prints the
# soak's summary, then per component the CPU in cores (mean over the run,
# and the busiest 5 s), the peak memory (PSS of all its processes) and the
# CPU over the run's second half (the rooms started, the joins done).
# $SOAK_POD_NICE is the nice value the local node runs the pods at
# (default 10, as make dev). $SOAK_CGROUPS=PREFIX splits CPU 0 in three
# CPU cgroups, whatever the number of threads in each: the pods in
# PREFIX-pods (the local node's --pod-cgroup, as a kubelet's kubepods),
# Postgres in PREFIX-postgres, the rest (control plane, local node,
# manager) in PREFIX-system, which weighs as much as the other two
# together, as a cluster whose control plane has machines of its own
# would: on a busy core, half for the rest, a quarter each for the pods
# and Postgres (default none: every process on its own; docs/benchmarks.md,
# "Eleventh session" and "Twelfth session").
# $SOAK_METRICS is the address the manager serves its Prometheus metrics
# on (default 0: off).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 DIR [roomload soak flags...]" >&2; exit 2; }
dir=$1
shift
root=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$dir" && mkdir -p "$dir" && chmod 755 "$dir"
go build -o "$dir/devcluster" "$root/hack/devcluster"
# cpu_cgroup NAME N makes CPU cgroup NAME below the root of the CPU
# hierarchy (cgroup v2's or v1's cpu controller), with the weight of N
# nice-0 processes, and prints its directory.
cpu_cgroup() {
  local d
  if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
    echo +cpu >/sys/fs/cgroup/cgroup.subtree_control
    d=/sys/fs/cgroup/$1 && mkdir -p "$d" && echo $((100 * $2)) >"$d/cpu.weight"
  else
    d=/sys/fs/cgroup/cpu/$1 && mkdir -p "$d" && echo $((1024 * $2)) >"$d/cpu.shares"
  fi
  echo "$d"
}
cgroups=${SOAK_CGROUPS:-}
system_cgroup=${cgroups:+$(cpu_cgroup "$cgroups-system" 2)}
postgres_cgroup=${cgroups:+$(cpu_cgroup "$cgroups-postgres" 1)}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
join="127.0.0.1:$(free_port)"
# exec: $! is the dev cluster itself, whose SIGTERM stops all it runs.
(cd "$root" && { [ -z "$system_cgroup" ] || echo "$BASHPID" >"$system_cgroup/cgroup.procs"; } && exec taskset -c 0 "$dir/devcluster" --dir "$dir/dev" --join-api "$join" --metrics "${SOAK_METRICS:-0}" --probes 0 \
  --pod-prefix 127.0.40. --pod-nice "${SOAK_POD_NICE:-10}" --pod-cgroup "${cgroups:+$cgroups-pods}" --gateway "127.0.0.1:$(free_port)" >"$dir/devcluster.log" 2>&1) &
cluster=$!
trap 'kill "$cluster" 2>/dev/null; wait "$cluster" 2>/dev/null || true; for g in $system_cgroup $postgres_cgroup; do for _ in 1 2 3 4 5; do rmdir "$g" 2>/dev/null && break; sleep 1; done; done' EXIT
for _ in $(seq 300); do
  grep -qs "Roomkeeper is running." "$dir/devcluster.log" && break
  kill -0 "$cluster" 2>/dev/null || { tail "$dir/devcluster.log" >&2; exit 1; }
  sleep 1
done
# Postgres moves to its own cgroup, its postmaster first: the backends it
# forks after are born there (and hack/postgres.sh restart keeps it there).
if [ -n "$cgroups" ]; then
  pm=$(head -n 1 "$dir/dev/pg/data/postmaster.pid")
  echo "$pm" >"$postgres_cgroup/cgroup.procs"
  for p in $(pgrep -P "$pm"); do echo "$p" >"$postgres_cgroup/cgroup.procs" 2>/dev/null || true; done
fi

# component names a process by its command line (the local node's names
# bin/roomserver in its --image-map: it is matched first).
component() {
  case "$1" in
    *bin/localnode*) echo localnode ;;
    *bin/roomserver*) echo roomserver ;; *bin/manager*) echo manager ;;
    *kube-apiserver*) echo kube-apiserver ;; *etcd*) echo etcd ;;
    postgres*|*bin/postgres*) echo postgres ;;
    *roomload*) echo roomload ;; *kube-scheduler*|*kube-controller-manager*|*devgateway*) echo control-other ;;
    *) echo "" ;;
  esac
}

# sample prints "component pid cputicks psskb" for every process of a
# component: run nothing else of the kind meanwhile (no tests, no make dev).
# PSS counts memory shared between processes (Postgres' shared buffers)
# once, split among them.
sample() {
  for stat in /proc/[0-9]*/stat; do
    pid=${stat#/proc/}; pid=${pid%/stat}
    cmd=$( (tr '\0' ' ' <"/proc/$pid/cmdline") 2>/dev/null) || continue
    c=$(component "$cmd"); [ -n "$c" ] || continue
    { read -r -a f <"$stat"; } 2>/dev/null || continue
    pss=$(awk '/^Pss:/ {print $2}' "/proc/$pid/smaps_rollup" 2>/dev/null) || continue
    echo "$c $pid $((f[13] + f[14])) ${pss:-0}"
  done
}

# The sampler forks two tools a process every 5 s: on CPU 1, with the
# players, not on the core it measures.
(while kill -0 "$cluster" 2>/dev/null; do
  echo "T $(date +%s.%N)"; sample; sleep 5
done) >"$dir/samples" &
sampler=$!
taskset -p -c 1 "$sampler" >/dev/null
start=$(date +%s.%N)
set +e
(cd "$root" && taskset -c 1 bin/roomload soak --kubeconfig "$dir/dev/kubeconfig" --join-api "http://$join" \
  --postgres-dir "$dir/dev/pg" "$@")
rc=$?
set -e
end=$(date +%s.%N)
kill "$sampler" 2>/dev/null || true
hz=$(getconf CLK_TCK)
# CPU: each process's ticks between consecutive samples (so processes
# that end mid-run count), over the whole run (mean) and the busiest 5 s
# (peak); memory: the largest sum of a component's PSS in one sample.
printf "%-16s %10s %10s %12s %12s\n" component "cores mean" "peak 5 s" "peak PSS" "2nd half"
awk -v hz="$hz" '
  $1 == "T" { n++; t[n] = $2; next }
  {
    key = $1 " " $2; seen[$1] = 1; mem[n, $1] += $4
    if (key in last && lastn[key] == n - 1) { d = ($3 - last[key]) / hz; cpu[$1] += d; step[n, $1] += d; step[n, "cluster-cpu0"] += ($1 == "roomload" ? 0 : d) }
    last[key] = $3; lastn[key] = n
  }
  END {
    seen["cluster-cpu0"] = 1
    for (c in seen) if (c != "roomload" && c != "cluster-cpu0") cpu["cluster-cpu0"] += cpu[c]
    for (i = 2; i <= n; i++) for (c in seen) {
      if (step[i, c] / (t[i] - t[i-1]) > peak[c]) peak[c] = step[i, c] / (t[i] - t[i-1])
      if (c != "cluster-cpu0") { if (c != "roomload") total[i] += mem[i, c]; if (mem[i, c] > pmem[c]) pmem[c] = mem[i, c] }
    }
    for (i = 2; i <= n; i++) if (total[i] > pmem["cluster-cpu0"]) pmem["cluster-cpu0"] = total[i]
    # The second half of the run: the rooms started, the joins done.
    mid = (t[1] + t[n]) / 2
    for (i = 2; i <= n; i++) if (t[i-1] >= mid) { span += t[i] - t[i-1]; for (c in seen) late[c] += step[i, c] }
    for (c in seen) printf "%-16s %10.2f %10.2f %8.0f MiB %12.3f\n", c, cpu[c] / (t[n] - t[1]), peak[c], pmem[c] / 1024, late[c] / span
  }' "$dir/samples" | sort
exit $rc
