# shellcheck shell=bash
# Shared by scripts/servers.sh and scripts/peers.sh (sourced, not run).
# Binaries are built once per machine into a cache outside the repository and reused.

STORLAB_TOOLS="${STORLAB_TOOLS:-$HOME/.cache/storlab-tools}"

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

log() { echo "[$(basename "$0")] $*" >&2; }
die() { echo "[$(basename "$0")] error: $*" >&2; exit 1; }

# Seconds since the epoch with one decimal, for timings.
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# apt_install PKG...: installs the Debian packages that are missing, without starting their
# services (a policy-rc.d that refuses service starts is in place for the install only).
apt_install() {
  local missing=() p
  for p in "$@"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  log "apt: installing ${missing[*]} (services are not started)"
  local policy=/usr/sbin/policy-rc.d placed=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\n# placed by storlab scripts during apt-get install\nexit 101\n' | $SUDO tee "$policy" >/dev/null
    $SUDO chmod 755 "$policy"
    placed=1
  fi
  local rc=0
  { $SUDO apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; } || rc=$?
  if [ "$placed" -eq 1 ]; then $SUDO rm -f "$policy"; fi
  [ "$rc" -eq 0 ] || die "apt-get install ${missing[*]} failed (exit $rc)"
}

# Serializes installs into the tools cache (two checkouts installing at once on one machine).
lock_tools() {
  mkdir -p "$STORLAB_TOOLS"
  exec 9>"$STORLAB_TOOLS/.install.lock"
  if ! flock -n 9; then
    log "waiting for another install into $STORLAB_TOOLS to finish"
    flock 9
  fi
}

need_go() {
  command -v go >/dev/null 2>&1 || die "Go (1.22 or newer) is required to build $1: install it and put go in PATH"
}

# go_build_module MODULE VERSION PACKAGE OUT [go build args...]
# Downloads MODULE@VERSION (an exact version) with `go mod download`, copies it to a writable
# build directory, runs $GO_PREBUILD (a shell snippet, run inside the copy) if set, builds
# PACKAGE (relative, e.g. ./cmd/x) and moves the binary to OUT atomically.
go_build_module() (
  module="$1" version="$2" pkg="$3" out="$4"
  shift 4
  need_go "$module"
  mkdir -p "$STORLAB_TOOLS" "$(dirname "$out")"
  build="$(mktemp -d "$STORLAB_TOOLS/build.XXXXXX")"
  # The module cache makes its files read-only: make the copy writable before removing it.
  trap 'chmod -R u+w "$build" 2>/dev/null; rm -rf "$build"' EXIT
  if ! (cd "$build" && go mod download -json "$module@$version") >"$build/download.json" 2>&1; then
    cat "$build/download.json" >&2
    die "go mod download $module@$version failed"
  fi
  dir="$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p' "$build/download.json")"
  [ -n "$dir" ] && [ -d "$dir" ] || die "go mod download $module@$version gave no module directory"
  cp -r "$dir" "$build/src"
  chmod -R u+w "$build/src"
  if [ -n "${GO_PREBUILD:-}" ]; then (cd "$build/src" && eval "$GO_PREBUILD"); fi
  (cd "$build/src" && GOFLAGS=-buildvcs=false go build -trimpath -o "$build/out" "$@" "$pkg") ||
    die "go build of $module@$version failed"
  mv -f "$build/out" "$out"
)

# ---------------------------------------------------------------------------------------------
# Server processes (servers.sh, fileservers.sh). STOP_TIMEOUT: seconds a server gets to exit
# after SIGTERM, before SIGKILL.
STOP_TIMEOUT="${STOP_TIMEOUT:-20}"

# Canonical absolute DIR (created if missing). Only plain path characters: DIR ends up in a
# SQLite URI, a PostgreSQL config and a unix socket path.
resolve_dir() {
  [ -n "${1:-}" ] || usage
  mkdir -p "$1"
  local d
  d="$(cd "$1" && pwd -P)"
  [[ "$d" =~ ^[A-Za-z0-9._/+-]+$ ]] || die "DIR '$d' must contain only letters, digits and . _ / + -"
  [ "$d" != / ] || die "DIR must not be /"
  echo "$d"
}

is_root() { [ "$(id -u)" -eq 0 ]; }

# stop_under DIR WHAT LEFT: a script's `stop DIR` command, over the caller's `stop_all DIR`:
# nothing to do when DIR does not exist; dies with "WHAT under DIR could not be stopped", else
# logs "stopped: LEFT of DIR left" (LEFT: what is no longer there).
stop_under() {
  local dir
  [ -n "${1:-}" ] || usage
  [ -d "$1" ] || { log "$1: no such directory, nothing to stop"; return 0; }
  dir="$(resolve_dir "$1")"
  stop_all "$dir" || die "$2 under $dir could not be stopped"
  log "stopped: $3 of $dir left"
}

# started_under DIR WHAT: DIR resolved, when WHAT was started under it (it has DIR/subnet).
started_under() {
  local dir
  dir="$(resolve_dir "${1:-}")"
  [ -r "$dir/subnet" ] || die "no $2 was started under $dir"
  echo "$dir"
}

# A pid that exists and is not a zombie.
alive() {
  local st
  [ -n "${1:-}" ] && [ -r "/proc/$1/stat" ] || return 1
  st="$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)" || return 1
  [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}

port_free() {
  python3 - "$1" <<'EOF'
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(1)
EOF
}

# pick_port NAME DEFAULT FORCED: FORCED if set (must be free), else the first free port from
# DEFAULT on.
pick_port() {
  local name="$1" p="$2" forced="$3" i
  if [ -n "$forced" ]; then
    port_free "$forced" || die "$name: port $forced (forced by the environment) is in use"
    echo "$forced"
    return
  fi
  for ((i = 0; i < 100; i++)); do
    if port_free $((p + i)); then
      echo $((p + i))
      return
    fi
  done
  die "$name: no free port in $p..$((p + 99))"
}

# Pid from a pid file (first line), or "".
pidfile_pid() { [ -r "$1" ] && head -n1 "$1" 2>/dev/null | tr -dc 0-9 || true; }

# term_wait NAME PID...: SIGTERM, wait up to STOP_TIMEOUT, then SIGKILL. Returns 1 if a pid
# survives.
term_wait() {
  local name="$1" pid i left
  shift
  [ "$#" -gt 0 ] || return 0
  kill -TERM "$@" 2>/dev/null || true
  kill -CONT "$@" 2>/dev/null || true # a stopped process handles SIGTERM only once continued
  for ((i = 0; i < STOP_TIMEOUT * 10; i++)); do
    left=0
    for pid in "$@"; do alive "$pid" && left=1; done
    [ "$left" -eq 0 ] && return 0
    sleep 0.1
  done
  log "$name: still running after ${STOP_TIMEOUT}s, sending SIGKILL to $*"
  kill -KILL "$@" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    left=0
    for pid in "$@"; do alive "$pid" && left=1; done
    [ "$left" -eq 0 ] && return 0
    sleep 0.1
  done
  return 1
}

# fail_server NAME LOG MESSAGE: prints the message with the end of the server's log and exits.
fail_server() {
  local name="$1" logfile="$2"
  shift 2
  echo "[$(basename "$0")] error: $name: $* (log: $logfile)" >&2
  if [ -s "$logfile" ]; then
    echo "----- last lines of $logfile -----" >&2
    tail -n 20 "$logfile" >&2
    echo "-----" >&2
  fi
  exit 1
}
