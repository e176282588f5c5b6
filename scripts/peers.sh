#!/usr/bin/env bash
# Installs the benchmark peers, cached outside the repository in
# ${STORLAB_TOOLS:-$HOME/.cache/storlab-tools}:
#   go-ycsb v1.0.1   built from its Go module at that exact version (pure Go, default tags)
#   YCSB 0.17.0 core (Java, with site.ycsb.BasicDB) and its runtime dependencies, by Maven
#
#   scripts/peers.sh install         install what is missing (idempotent), print how to run them
#   scripts/peers.sh install-ycsb    install YCSB 0.17.0 only (what tests/ycsb_exact.rs needs)
#   scripts/peers.sh env             print export lines: STORLAB_GO_YCSB, STORLAB_YCSB_CP,
#                                    STORLAB_YCSB_WORKLOADS, STORLAB_GO_YCSB_WORKLOADS
#   scripts/peers.sh check [ADDR]    run a tiny workload A with both against their null DB
#                                    (basic / BasicDB), and with go-ycsb against Redis at ADDR
#                                    (host:port or redis://host:port/db) if given
set -euo pipefail
SCRIPTS="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=scripts/tools-lib.sh
. "$SCRIPTS/tools-lib.sh"

GO_YCSB_VERSION=v1.0.1
GO_YCSB_DIR="$STORLAB_TOOLS/go-ycsb-$GO_YCSB_VERSION"
GO_YCSB_BIN="$GO_YCSB_DIR/go-ycsb"
YCSB_VERSION=0.17.0
YCSB_DIR="$STORLAB_TOOLS/ycsb-$YCSB_VERSION"
YCSB_CP="$YCSB_DIR/core-$YCSB_VERSION.jar:$YCSB_DIR/deps/*"
# Pinned so that the result does not depend on Maven's default plugin version.
DEPENDENCY_PLUGIN_VERSION=3.6.1

usage() {
  sed -n '7,13p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

go_ycsb_cached() {
  [ -x "$GO_YCSB_BIN" ] && [ "$(cat "$GO_YCSB_DIR/VERSION" 2>/dev/null)" = "$GO_YCSB_VERSION" ] &&
    [ -f "$GO_YCSB_DIR/workloads/workloada" ]
}

ycsb_cached() {
  [ "$(cat "$YCSB_DIR/VERSION" 2>/dev/null)" = "$YCSB_VERSION" ] &&
    [ -f "$YCSB_DIR/core-$YCSB_VERSION.jar" ] && [ -f "$YCSB_DIR/workloads/workloada" ]
}

install_go_ycsb() {
  if go_ycsb_cached; then
    log "go-ycsb $GO_YCSB_VERSION: cached at $GO_YCSB_BIN"
    return
  fi
  local t
  t="$(now)"
  log "go-ycsb $GO_YCSB_VERSION: building (several minutes on 2 cores)"
  rm -rf "$GO_YCSB_DIR"
  mkdir -p "$GO_YCSB_DIR"
  # Default tags, as its Makefile does when neither RocksDB nor a system SQLite nor
  # FoundationDB is present: those three bindings are left out; basic, redis, mongodb, pg,
  # mysql and the others are in. The module's workloads/ are kept next to the binary.
  GO_PREBUILD="cp -r workloads '$GO_YCSB_DIR/workloads'" \
    CGO_ENABLED=0 go_build_module github.com/pingcap/go-ycsb "$GO_YCSB_VERSION" ./cmd/go-ycsb "$GO_YCSB_BIN"
  echo "$GO_YCSB_VERSION" >"$GO_YCSB_DIR/VERSION"
  log "go-ycsb $GO_YCSB_VERSION: built in $(elapsed "$t") s -> $GO_YCSB_BIN"
}

install_ycsb() {
  if ycsb_cached; then
    log "YCSB $YCSB_VERSION: cached at $YCSB_DIR"
    return
  fi
  # Java (javac too: tests/ycsb_exact.rs compiles its driver) and Maven, from Debian when absent.
  if ! command -v mvn >/dev/null || ! command -v javac >/dev/null; then
    apt_install default-jdk-headless maven
  fi
  command -v mvn >/dev/null || die "Maven (mvn) is required to fetch YCSB $YCSB_VERSION: apt-get install maven"
  command -v javac >/dev/null || die "A JDK is required to run YCSB $YCSB_VERSION: apt-get install default-jdk-headless"
  local t work
  t="$(now)"
  log "YCSB $YCSB_VERSION: fetching site.ycsb:core:$YCSB_VERSION and its runtime dependencies with Maven"
  mkdir -p "$STORLAB_TOOLS"
  work="$(mktemp -d "$STORLAB_TOOLS/ycsb-build.XXXXXX")"
  cat >"$work/pom.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<!-- written by storlab scripts/peers.sh: only to copy YCSB core and its dependencies -->
<project>
  <modelVersion>4.0.0</modelVersion>
  <groupId>storlab.local</groupId>
  <artifactId>ycsb-fetch</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>site.ycsb</groupId>
      <artifactId>core</artifactId>
      <version>$YCSB_VERSION</version>
    </dependency>
  </dependencies>
  <build>
    <plugins>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId>
        <artifactId>maven-dependency-plugin</artifactId>
        <version>$DEPENDENCY_PLUGIN_VERSION</version>
      </plugin>
    </plugins>
  </build>
</project>
EOF
  if ! (cd "$work" && mvn -B -q -C dependency:copy-dependencies -DincludeScope=runtime \
    -DoutputDirectory="$work/out/deps" >"$work/mvn.log" 2>&1); then
    tail -n 30 "$work/mvn.log" >&2
    rm -rf "$work"
    die "YCSB $YCSB_VERSION: Maven could not fetch site.ycsb:core:$YCSB_VERSION"
  fi
  mv "$work/out/deps/core-$YCSB_VERSION.jar" "$work/out/"
  mkdir -p "$work/out/workloads"
  # The standard YCSB workload A (50% reads, 50% updates, zipfian), as in YCSB's workloads/.
  cat >"$work/out/workloads/workloada" <<'EOF'
# Yahoo! Cloud System Benchmark, Workload A: update heavy workload
# Application example: session store recording recent actions
# Read/update ratio: 50/50, default data size 1 KB records (10 fields, 100 bytes each)
recordcount=1000
operationcount=1000
workload=site.ycsb.workloads.CoreWorkload
readallfields=true
readproportion=0.5
updateproportion=0.5
scanproportion=0
insertproportion=0
requestdistribution=zipfian
EOF
  echo "$YCSB_VERSION" >"$work/out/VERSION"
  rm -rf "$YCSB_DIR"
  mv "$work/out" "$YCSB_DIR"
  rm -rf "$work"
  ycsb_cached || die "YCSB $YCSB_VERSION: incomplete install in $YCSB_DIR"
  log "YCSB $YCSB_VERSION: fetched in $(elapsed "$t") s -> $YCSB_DIR ($(ls "$YCSB_DIR/deps" | wc -l) dependency jars)"
}

cmd_env() {
  printf 'export STORLAB_GO_YCSB=%q\n' "$GO_YCSB_BIN"
  printf 'export STORLAB_GO_YCSB_WORKLOADS=%q\n' "$GO_YCSB_DIR/workloads"
  printf 'export STORLAB_YCSB_CP=%q\n' "$YCSB_CP"
  printf 'export STORLAB_YCSB_WORKLOADS=%q\n' "$YCSB_DIR/workloads"
}

cmd_install() {
  lock_tools
  install_go_ycsb
  install_ycsb
  cat >&2 <<EOF
[peers.sh] how to run them:
  $GO_YCSB_BIN load basic -P $GO_YCSB_DIR/workloads/workloada -p recordcount=1000
  $GO_YCSB_BIN run redis -P $GO_YCSB_DIR/workloads/workloada -p redis.addr=127.0.0.1:56379
  java -cp '$YCSB_CP' site.ycsb.Client -t -db site.ycsb.BasicDB \\
    -P $YCSB_DIR/workloads/workloada -p basicdb.verbose=false -p operationcount=1000 -s
  (scripts/peers.sh env prints these paths as export lines)
EOF
}

# check_output NAME LOGFILE PATTERN: the run's output must show completed operations.
check_output() {
  grep -qE "$3" "$2" || { tail -n 30 "$2" >&2; die "$1: no '$3' in its output ($2)"; }
}

cmd_check() {
  local redis_addr="${1:-}" out t
  # Also accepts a redis:// URL such as STORLAB_TEST_REDIS_URL.
  redis_addr="${redis_addr#redis://}"
  redis_addr="${redis_addr%%/*}"
  go_ycsb_cached || die "go-ycsb $GO_YCSB_VERSION is not installed: run scripts/peers.sh install"
  ycsb_cached || die "YCSB $YCSB_VERSION is not installed: run scripts/peers.sh install"
  out="$(mktemp -d /tmp/storlab-peers-check.XXXXXX)"
  # shellcheck disable=SC2064
  trap "rm -rf '$out'" EXIT
  local small=(-p recordcount=100 -p operationcount=2000 -p threadcount=2)

  t="$(now)"
  "$GO_YCSB_BIN" run basic -P "$GO_YCSB_DIR/workloads/workloada" "${small[@]}" >"$out/go-basic.log" 2>&1 ||
    { tail -n 30 "$out/go-basic.log" >&2; die "go-ycsb run basic failed"; }
  check_output "go-ycsb run basic" "$out/go-basic.log" '^(READ|UPDATE) .*Count: [1-9]'
  log "go-ycsb run basic workloada: ok ($(elapsed "$t") s)"

  if [ -n "$redis_addr" ]; then
    t="$(now)"
    "$GO_YCSB_BIN" load redis -P "$GO_YCSB_DIR/workloads/workloada" "${small[@]}" -p redis.addr="$redis_addr" \
      >"$out/go-redis-load.log" 2>&1 || { tail -n 30 "$out/go-redis-load.log" >&2; die "go-ycsb load redis ($redis_addr) failed"; }
    check_output "go-ycsb load redis" "$out/go-redis-load.log" '^INSERT .*Count: [1-9]'
    "$GO_YCSB_BIN" run redis -P "$GO_YCSB_DIR/workloads/workloada" "${small[@]}" -p redis.addr="$redis_addr" \
      >"$out/go-redis-run.log" 2>&1 || { tail -n 30 "$out/go-redis-run.log" >&2; die "go-ycsb run redis ($redis_addr) failed"; }
    check_output "go-ycsb run redis" "$out/go-redis-run.log" '^(READ|UPDATE) .*Count: [1-9]'
    if grep -qE '_ERROR ' "$out/go-redis-run.log"; then
      grep -E '_ERROR ' "$out/go-redis-run.log" >&2
      die "go-ycsb run redis: operations failed"
    fi
    log "go-ycsb load+run redis workloada at $redis_addr: ok ($(elapsed "$t") s)"
  fi

  t="$(now)"
  java -cp "$YCSB_CP" site.ycsb.Client -t -db site.ycsb.BasicDB -P "$YCSB_DIR/workloads/workloada" \
    -p basicdb.verbose=false "${small[@]}" -s >"$out/ycsb-basic.log" 2>&1 ||
    { tail -n 30 "$out/ycsb-basic.log" >&2; die "YCSB $YCSB_VERSION run BasicDB failed"; }
  check_output "YCSB BasicDB" "$out/ycsb-basic.log" '^\[OVERALL\], Throughput'
  check_output "YCSB BasicDB" "$out/ycsb-basic.log" '^\[(READ|UPDATE)\], Operations, [1-9]'
  log "YCSB $YCSB_VERSION run BasicDB workloada: ok ($(elapsed "$t") s)"
}

case "${1:-}" in
  install) cmd_install ;;
  install-ycsb) lock_tools; install_ycsb ;;
  env) cmd_env ;;
  check) cmd_check "${2:-}" ;;
  *) usage ;;
esac
