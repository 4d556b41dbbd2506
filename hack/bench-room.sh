#!/usr/bin/env bash
# Room-server load scenarios over real sockets on loopback.
#
# The issue 11 matrix, with `roomload bench` (server pinned to CPU 0, bots to
# CPU 1, one JSON line per run; docs/benchmarks.md, "Room server at scale"):
#   hack/bench-room.sh matrix [out.jsonl]   # N = 200, 500, 1,000 and 200 + 2,000 NPCs, point and spread
#   hack/bench-room.sh table out.jsonl      # those lines as a markdown table
# Any other run: bin/roomload bench --players N --npcs M --spawn point|spread ... (roomload bench -h).
#
# The older scenario (unpinned, `roomctl bots`; still used for the
# checkpoint row): one roomserver process, one roomctl process running the
# bots. Prints the server's CPU in cores, the tick-time p99 bucket, and the
# bots' downstream and RTT.
#
#   [INPUT_RATE=30] hack/bench-room.sh [players] [snapshot-rate] [npc-density] [seconds]
# DATABASE=1 runs a throwaway Postgres (hack/postgres.sh) with 1 s
# checkpoints, to see the tick while checkpoints run.
# Bots send INPUT_RATE movement messages a second (30: one per tick, as a
# game client does; every message also acknowledges the newest snapshot).
#   hack/bench-room.sh 1000 20 0 30     # 1,000 connections at 20 Hz
#   hack/bench-room.sh 200 20 0.5 30    # 200 players, ~2,000 NPCs, AOI at 20 Hz
set -euo pipefail
cd "$(dirname "$0")/.."

# BENCH_ARGS are added to every roomload bench run of the matrix
# (--duration 30s, --server-flag=--input-window=15, ...).
if [ "${1:-}" = matrix ]; then
  out=${2:-bench-room.jsonl}
  make build >/dev/null
  for scenario in "200 0" "500 0" "1000 0" "200 2000"; do
    set -- $scenario
    for spawn in point spread; do
      bin/roomload bench --players "$1" --npcs "$2" --spawn "$spawn" --codec binary --snapshot-rate 20 --tick-rate 30 \
        --duration 20s --warmup 5s --wait-idle 10m --label "issue 11 matrix" --out "$out" ${BENCH_ARGS:-}
    done
  done
  exit 0
fi
if [ "${1:-}" = table ]; then
  echo "| players | NPCs | spawn | snapshots/s p50 (p5) | down kB/s p50 / p99 | input -> ack p50 / p99 | server cores (tick work) | RSS peak / end | inputs dropped / skipped | bot cores | other work | errors |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
  jq -r 'def r(n): . * n | round / n;
    "| \(.config.players) | \(.entitiesBeforePlayers) | \(.config.spawn) | \(.clients.snapshotHz.p50 | r(10)) (\(.clients.snapshotHz.p5 | r(10))) | \(.clients.downKBps.p50 | r(10)) / \(.clients.downKBps.p99 | r(10)) | \(.clients.latencyMs.p50 | r(1)) / \(.clients.latencyMs.p99 | r(1)) ms | \(.server.cores | r(100)) (\(.server.tickWorkCores | r(100))) | \(.server.peakRSSMiB | round) / \(.server.endRSSMiB | round) MiB | \(.server.droppedInputs) / \(.server.skippedInputs) | \(.bots.cores | r(100)) | \(.machine.othersOnServerCPU // 0 | r(100)) / \(.machine.othersOnBotCPU // 0 | r(100)) | \(.clients.errors) |"' "$2"
  exit 0
fi
players=${1:-200} rate=${2:-20} density=${3:-0.5} seconds=${4:-30}
warmup=5
make build >/dev/null
work=$(mktemp -d)
chmod 755 "$work" # the postgres user must reach $work/pg
trap 'kill $server 2>/dev/null || true; [ -z "${DATABASE:-}" ] || hack/postgres.sh stop "$work/pg" >/dev/null 2>&1; rm -rf "$work"' EXIT
bin/roomctl keygen --dir "$work/keys" >/dev/null
db_env=()
if [ -n "${DATABASE:-}" ]; then
  db_env=(ROOMKEEPER_DATABASE_URL="$(hack/postgres.sh start "$work/pg" 2>/dev/null)")
fi

env "${db_env[@]}" ROOMKEEPER_MAP_CONFIG="{\"seed\":42,\"width\":512,\"height\":512,\"npcDensity\":$density}" \
  bin/roomserver --checkpoint-interval=1s --room=bench --map=town --instance=bench-town --key-dir="$work/keys" \
  --listen=127.0.0.1:0 --http-listen=127.0.0.1:0 --tick-rate=30 --snapshot-rate="$rate" \
  --max-players=$((players + 10)) 2>"$work/server.log" &
server=$!
for _ in $(seq 100); do grep -q '"Serving"' "$work/server.log" && break; sleep 0.1; done
game=$(grep -o '"game":"[^"]*"' "$work/server.log" | cut -d'"' -f4)
ops=$(grep -o '"http":"[^"]*"' "$work/server.log" | cut -d'"' -f4)
entities=$(curl -s "http://$ops/metrics" | awk '/^roomkeeper_roomserver_entities /{print $2}')

cpu() { awk '{print $14 + $15}' "/proc/$server/stat"; }
bin/roomctl bots --endpoint "ws://$game/ws" --key-dir "$work/keys" --room bench --instance bench-town \
  --count "$players" --duration "${seconds}s" --codec binary --input-rate "${INPUT_RATE:-30}" >"$work/bots.log" 2>&1 &
bots=$!
sleep "$warmup"
c1=$(cpu); t1=$(date +%s.%N)
sleep $((seconds - warmup - 2))
c2=$(cpu); t2=$(date +%s.%N)
curl -s "http://$ops/metrics" >"$work/metrics"
wait $bots || true

hz=$(getconf CLK_TCK)
cores=$(echo "($c2 - $c1) / $hz / ($t2 - $t1)" | bc -l)
tick_p99=$(awk '/^roomkeeper_roomserver_tick_duration_seconds_count/{n=$2} /^roomkeeper_roomserver_tick_duration_seconds_bucket/{b[++i]=$0} END{for(j=1;j<=i;j++){split(b[j],p," "); if(p[2]>=0.99*n){match(b[j],/le="[^"]*"/); print substr(b[j],RSTART+4,RLENGTH-5); exit}}}' "$work/metrics")
tick_sum=$(awk '/^roomkeeper_roomserver_tick_duration_seconds_sum/{print $2}' "$work/metrics")
tick_n=$(awk '/^roomkeeper_roomserver_tick_duration_seconds_count/{print $2}' "$work/metrics")
printf 'players %s  entities %s  snapshot %s Hz\n' "$players" "$entities" "$rate"
printf 'server cpu %.3f cores (tick work %.3f cores); tick p99 <= %s s\n' "$cores" "$(echo "$tick_sum / $tick_n * 30" | bc -l)" "$tick_p99"
snap_bytes=$(awk '/^roomkeeper_roomserver_snapshot_bytes_sum\{codec="binary"\}/{s=$2} /^roomkeeper_roomserver_snapshot_bytes_count\{codec="binary"\}/{n=$2} END{if(n>0) printf "%.0f", s/n}' "$work/metrics")
printf 'mean binary snapshot %s bytes\n' "$snap_bytes"
if [ -n "${DATABASE:-}" ]; then
  awk '/^roomkeeper_roomserver_checkpoint_duration_seconds_(sum|count)/{v[$1]=$2} /^roomkeeper_roomserver_checkpoint_failures_total/{f=$2} END{printf "checkpoints %d, mean %.1f ms, failures %d\n", v["roomkeeper_roomserver_checkpoint_duration_seconds_count"], 1000*v["roomkeeper_roomserver_checkpoint_duration_seconds_sum"]/v["roomkeeper_roomserver_checkpoint_duration_seconds_count"], f}' "$work/metrics"
fi
tail -n 3 "$work/bots.log"
