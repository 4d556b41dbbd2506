#!/usr/bin/env bash
# A throwaway Postgres from the machine's own binaries, for humans and
# `make dev` (tests use internal/testenv, which does the same in Go).
#
# Usage:
#   hack/postgres.sh start DIR   initdb DIR if it holds no cluster, start the
#                                server on 127.0.0.1 ($PGPORT, or a free port;
#                                a running server keeps its port) and print its
#                                DSN on stdout. Everything else goes to stderr.
#   hack/postgres.sh stop DIR    fast shutdown; DIR and its data are kept.
#   hack/postgres.sh restart DIR as after a crash: immediate shutdown (no
#                                checkpoint: the next start recovers from the
#                                WAL), then start on the same port; prints
#                                the DSN. For chaos tests (`roomload soak`).
#   hack/postgres.sh ensure      install the binaries if missing and print
#                                their directory (`make test` runs this).
#
# $PGLISTEN is the address to listen on instead of 127.0.0.1 (make cluster:
# the control plane's address inside its namespace), and $PGTRUST the
# networks trusted besides loopback, comma-separated (its pods and nodes).
# $PGSERVEROPTS adds server settings, for a measurement: e.g.
# PGSERVEROPTS='-c shared_preload_libraries=pg_stat_statements'.
#
# Binaries: $ROOMKEEPER_PG_BIN, else the newest /usr/lib/postgresql/*/bin,
# else PATH. When they are missing and we are root, `apt-get install
# postgresql` fetches them. Postgres refuses to run as root, so as root the
# server runs as the postgres OS user. Trust authentication on loopback only,
# fsync off: this is for development data, never for anything you keep.
set -euo pipefail

usage() {
  echo "usage: $0 start|stop|restart DIR | ensure" >&2
  exit 2
}

log() { echo "postgres.sh: $*" >&2; }

has_server_binaries() { [ -x "$1/initdb" ] && [ -x "$1/postgres" ] && [ -x "$1/pg_ctl" ]; }

find_bin() {
  if [ -n "${ROOMKEEPER_PG_BIN:-}" ]; then
    has_server_binaries "$ROOMKEEPER_PG_BIN" && { echo "$ROOMKEEPER_PG_BIN"; return 0; }
    return 1
  fi
  local dir
  for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k5,5 -rn); do
    has_server_binaries "$dir" && { echo "$dir"; return 0; }
  done
  local initdb
  initdb=$(command -v initdb 2>/dev/null) || return 1
  has_server_binaries "$(dirname "$initdb")" && dirname "$initdb"
}

# install_or_fail gets the binaries when we can, else says how.
install_or_fail() {
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    log "PostgreSQL server binaries missing: installing them with apt-get"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
    return 0
  fi
  log "PostgreSQL server binaries (initdb, pg_ctl, postgres) not found in" \
    "ROOMKEEPER_PG_BIN, /usr/lib/postgresql/*/bin or PATH." \
    "Install them (Debian: sudo apt-get install postgresql-15) or set ROOMKEEPER_PG_BIN."
  exit 1
}

# as_server_user runs a command as the user owning the cluster.
as_server_user() {
  if [ "$(id -u)" = 0 ]; then
    # From inside DIR: the caller's working directory may be closed to postgres.
    (cd "$dir" && runuser -u postgres -- env -i PATH="$PATH" LC_ALL=C TZ=UTC "$@")
  else
    env -u PGDATA -u PGPORT -u PGHOST "$@"
  fi
}

port_in_use() { (exec 3<>"/dev/tcp/${PGLISTEN:-127.0.0.1}/$1") 2>/dev/null; }

free_port() {
  local port tries
  for tries in $(seq 1 100); do
    port=$((20000 + RANDOM % 40000))
    port_in_use "$port" || { echo "$port"; return 0; }
  done
  log "no free port found on $listen"
  exit 1
}

listen=${PGLISTEN:-127.0.0.1}

dsn() { echo "postgres://postgres@$listen:$1/postgres?sslmode=disable"; }

is_running() { as_server_user "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1; }

start() {
  mkdir -p "$dir/sock"
  if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || { log "no postgres OS user (apt-get install postgresql creates it)"; exit 1; }
    chown postgres: "$dir" "$dir/sock"
    chmod 700 "$dir"
    runuser -u postgres -- test -x "$dir" ||
      { log "the postgres user cannot reach $dir: pick a DIR whose parents it may enter"; exit 1; }
  fi
  if [ ! -f "$data/PG_VERSION" ]; then
    log "initialising a cluster in $data"
    as_server_user "$bin/initdb" -D "$data" -U postgres -A trust -E UTF8 --locale=C --no-sync >&2
  fi
  local net
  for net in $(echo "${PGTRUST:-}" | tr , ' '); do
    grep -q "^host all all $net trust" "$data/pg_hba.conf" || echo "host all all $net trust" >>"$data/pg_hba.conf"
  done
  if is_running; then
    dsn "$(cat "$dir/port")"
    return 0
  fi
  # max_connections: the dev cluster's 50-room soak starts 100 map pods,
  # each allowed maxConnectionsPerPod (4), beside the join API's and the
  # manager's pools (16 each): 300 refused connections while they started
  # (docs/benchmarks.md, "Density").
  local port tries
  for tries in 1 2 3 4 5; do
    port=${PGPORT:-$(free_port)}
    echo "$port" >"$dir/port"
    if as_server_user "$bin/pg_ctl" -D "$data" -l "$dir/postgres.log" -w -t 60 \
      -o "-p $port -k '$dir/sock' -c listen_addresses=$listen -c fsync=off -c max_connections=500 ${PGSERVEROPTS:-}" start >&2; then
      dsn "$port"
      return 0
    fi
    # Another server (the tests start many at once) took the port between
    # the check and the bind: pick another, unless PGPORT named it.
    [ -z "${PGPORT:-}" ] && tail -n 20 "$dir/postgres.log" | grep -q "could not bind\|could not create any TCP/IP sockets" || break
    log "port $port was taken meanwhile; trying another"
  done
  log "start failed; the end of $dir/postgres.log:"
  tail -n 20 "$dir/postgres.log" >&2
  exit 1
}

stop() {
  if is_running; then
    as_server_user "$bin/pg_ctl" -D "$data" -m fast -w stop >&2
  fi
}

# restart crashes the server as a power cut would: an immediate shutdown,
# and when that has not ended in 60 s, SIGKILL to the postmaster and every
# backend, then a start. On a 50-room soak's full core an immediate
# shutdown took 85 s, then 6.5 minutes; a restart that gave up on pg_ctl
# left the server down for good (docs/benchmarks.md, "Density").
# The new server runs where the old one ran, on its CPUs and in its CPU
# cgroup, not where the caller runs: the soak restarts it from the
# players' CPU, and the server then ran beside them, off the core it
# was measured on (docs/benchmarks.md, "Twelfth session").
restart() {
  local pid cpus procs
  pid=$(head -n 1 "$data/postmaster.pid" 2>/dev/null) || pid=""
  if [ -n "$pid" ]; then
    cpus=$(taskset -pc "$pid" 2>/dev/null | sed 's/.*: //') || cpus=""
    procs=$(cpu_cgroup_procs "$pid") || procs=""
  fi
  if is_running && ! as_server_user "$bin/pg_ctl" -D "$data" -m immediate -t 60 -w stop >&2; then
    log "the server did not stop in 60 s: killing it"
    kill_server
  fi
  # This shell moves there; the server it starts is born there.
  [ -z "${cpus:-}" ] || taskset -pc "$cpus" $$ >/dev/null
  [ -z "${procs:-}" ] || echo $$ >"$procs"
  PGPORT=$(cat "$dir/port") start
}

# cpu_cgroup_procs prints the cgroup.procs file of process $1's CPU
# cgroup (cgroup v1's cpu controller, or v2's unified hierarchy), or
# nothing when that is the root or cannot be entered.
cpu_cgroup_procs() {
  local line path=""
  if line=$(grep -E '^[0-9]+:([^:]*,)?cpu(,[^:]*)?:' "/proc/$1/cgroup" 2>/dev/null); then
    path=/sys/fs/cgroup/cpu${line##*:}
  elif line=$(grep '^0::' "/proc/$1/cgroup" 2>/dev/null); then
    path=/sys/fs/cgroup${line##*:}
  fi
  [ -n "$path" ] && [ "${line##*:}" != / ] && [ -w "$path/cgroup.procs" ] && echo "$path/cgroup.procs"
}

# kill_server sends SIGKILL to the postmaster of $data and its backends,
# waits until each is gone or a zombie, and removes their lock files. The
# wait is up to 10 minutes: a postmaster killed on a full core was seen
# in the kernel for minutes, freeing its shared memory
# (shmem_undo_range), SIGKILL pending.
kill_server() {
  local pid pids p tries alive
  pid=$(head -n 1 "$data/postmaster.pid" 2>/dev/null) || return 0
  [ -n "$pid" ] || return 0
  pids="$pid $(pgrep -P "$pid" | tr '\n' ' ' || true)" # before the backends lose their parent
  for tries in $(seq 600); do
    alive=""
    for p in $pids; do
      kill -KILL "$p" 2>/dev/null || continue
      [ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" = Z ] || alive="$alive $p"
    done
    if [ -z "$alive" ]; then
      # A killed postmaster leaves its lock files, naming a pid that may
      # linger as a zombie: the next start would take it for alive.
      rm -f "$data/postmaster.pid" "$dir"/sock/.s.PGSQL.*
      return 0
    fi
    sleep 1
  done
  log "postgres processes survived SIGKILL for 10 minutes:$alive"
  exit 1
}


if [ "${1:-}" = ensure ] && [ $# -eq 1 ]; then
  bin=$(find_bin) || { install_or_fail; bin=$(find_bin) || { log "still no PostgreSQL binaries after installing"; exit 1; }; }
  echo "$bin"
  exit 0
fi
[ $# -eq 2 ] || usage
cmd=$1
case "$cmd" in
  start) mkdir -p "$2" ;;
  stop) [ -f "$2/data/PG_VERSION" ] || { log "no cluster in $2"; exit 0; } ;;
  restart) [ -f "$2/data/PG_VERSION" ] || { log "no cluster in $2"; exit 1; } ;;
  *) usage ;;
esac
dir=$(cd "$2" && pwd)
data="$dir/data"
if [ -n "${ROOMKEEPER_PG_BIN:-}" ] && ! has_server_binaries "$ROOMKEEPER_PG_BIN"; then
  log "ROOMKEEPER_PG_BIN=$ROOMKEEPER_PG_BIN holds no initdb, pg_ctl and postgres"
  exit 1
fi
bin=$(find_bin) || {
  install_or_fail
  bin=$(find_bin) || { log "still no PostgreSQL binaries after installing"; exit 1; }
}
"$cmd"
