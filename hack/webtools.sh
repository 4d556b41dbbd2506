#!/usr/bin/env bash
# Checks, and where it can installs, what the browser client needs:
# Node.js >= 20 with npm (the SDK's compiler, bundler and tests), the
# npm packages of web/package-lock.json, and Chromium for the browser
# tests (Debian's package; no test tool downloads a browser here).
#
# Usage:
#   hack/webtools.sh node       Node.js and npm, then `npm ci` in web/ when
#                               the lock file changed since the last install
#   hack/webtools.sh chromium   print the Chromium binary, installing
#                               Debian's chromium package when missing
set -euo pipefail
cd "$(dirname "$0")/.."

log() { echo "webtools.sh: $*" >&2; }

apt_install() {
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    log "installing $* with apt-get"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >&2
    return 0
  fi
  return 1
}

node_major() { node -e 'process.stdout.write(process.versions.node.split(".")[0])' 2>/dev/null || echo 0; }

ensure_node() {
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    apt_install nodejs npm || true
  fi
  if ! command -v npm >/dev/null || [ "$(node_major)" -lt 20 ]; then
    log "Node.js >= 20 with npm is needed (found: $(node --version 2>/dev/null || echo none))." \
      "Install it (Debian 12 ships 18: use the NodeSource packages, or nvm) and run make again."
    exit 1
  fi
  # npm ci only when the lock file changed: it wipes node_modules first.
  local stamp=web/node_modules/.roomkeeper-lock
  if ! cmp -s web/package-lock.json "$stamp" 2>/dev/null; then
    (cd web && npm ci --no-audit --no-fund --loglevel=error) >&2
    cp web/package-lock.json "$stamp"
  fi
}

ensure_chromium() {
  local bin=${ROOMKEEPER_CHROMIUM:-}
  if [ -z "$bin" ]; then
    bin=$(command -v chromium || command -v chromium-browser || true)
  fi
  if [ -z "$bin" ]; then
    apt_install chromium || true
    bin=$(command -v chromium || true)
  fi
  if [ -z "$bin" ] || [ ! -x "$bin" ]; then
    log "Chromium is needed for the browser tests and was not found." \
      "Install it (Debian: sudo apt-get install chromium) or set ROOMKEEPER_CHROMIUM to its binary."
    exit 1
  fi
  echo "$bin"
}

case "${1:-}" in
  node) ensure_node ;;
  chromium) ensure_chromium ;;
  *) echo "usage: $0 node|chromium" >&2; exit 2 ;;
esac
