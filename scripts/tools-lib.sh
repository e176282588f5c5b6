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
