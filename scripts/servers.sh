#!/usr/bin/env bash
# Installs, starts and stops the real servers that storlab's YCSB tests and benchmarks use:
# PostgreSQL 15, Redis 7 and memcached 1.6 (Debian packages) and FerretDB (MongoDB wire protocol, SQLite
# backend; built from its Go module at an exact version and cached outside the repository).
#
#   scripts/servers.sh install      install what is missing (idempotent)
#   scripts/servers.sh start DIR    start all four on 127.0.0.1 with fresh data under DIR,
#                                   wait until each answers, write DIR/env.sh
#   scripts/servers.sh stop DIR     stop everything started under DIR (also half-started)
#   scripts/servers.sh status DIR   show what runs and answers (exit 1 if not all do)
#   scripts/servers.sh selftest     start in a temporary DIR, round trip with each server's
#                                   own client, stop, check that no process is left
#
# Ports: PostgreSQL 55432, Redis 56379, FerretDB 57017, memcached 51211; if one is taken, the next free port
# (up to +99) is used. STORLAB_PG_PORT, STORLAB_REDIS_PORT, STORLAB_FERRETDB_PORT,
# STORLAB_MEMCACHED_PORT force a port.
# Binaries are cached in ${STORLAB_TOOLS:-$HOME/.cache/storlab-tools}.
# Everything listens on 127.0.0.1 only; the Debian default instances are neither used nor
# started. `start` removes and recreates DIR/postgres, DIR/redis, DIR/ferretdb and DIR/memcached.
set -euo pipefail
SCRIPTS="$(cd "$(dirname "$0")" && pwd)"
SELF="$SCRIPTS/servers.sh"
# shellcheck source=scripts/tools-lib.sh
. "$SCRIPTS/tools-lib.sh"

FERRETDB_VERSION=v1.24.0
FERRETDB_BIN="$STORLAB_TOOLS/ferretdb-$FERRETDB_VERSION/ferretdb"
PG_BIN="${STORLAB_PG_BIN:-/usr/lib/postgresql/15/bin}"
PG_USER=storlab
PG_DB=ycsb
START_TIMEOUT=60 # seconds each server gets to answer
STOP_TIMEOUT=20  # seconds each server gets to exit after SIGTERM, before SIGKILL

usage() {
  sed -n '5,12p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

# ---------------------------------------------------------------------------------------------
# install

ferretdb_cached() {
  [ -x "$FERRETDB_BIN" ] || return 1
  local v
  v="$("$FERRETDB_BIN" --version 2>/dev/null)" || return 1
  grep -qx "version: $FERRETDB_VERSION" <<<"$v"
}

cmd_install() {
  lock_tools
  local t
  t="$(now)"
  apt_install postgresql-15 postgresql-client-15 redis-server redis-tools memcached python3 openssl
  log "Debian packages present ($(elapsed "$t") s)"
  [ -x "$PG_BIN/initdb" ] || die "PostgreSQL 15 binaries not found in $PG_BIN"
  if ferretdb_cached; then
    log "FerretDB $FERRETDB_VERSION: cached at $FERRETDB_BIN"
  else
    t="$(now)"
    log "FerretDB $FERRETDB_VERSION: building (a few minutes on 2 cores)"
    # version.txt is what `git describe` would give; FerretDB refuses to start without it.
    # Built like its production image: pure Go (SQLite via modernc), no build tags.
    GO_PREBUILD="echo $FERRETDB_VERSION > build/version/version.txt" \
      CGO_ENABLED=0 go_build_module github.com/FerretDB/FerretDB "$FERRETDB_VERSION" ./cmd/ferretdb "$FERRETDB_BIN"
    ferretdb_cached || die "the built $FERRETDB_BIN does not report version $FERRETDB_VERSION"
    log "FerretDB $FERRETDB_VERSION: built in $(elapsed "$t") s -> $FERRETDB_BIN"
  fi
}

# ---------------------------------------------------------------------------------------------
# helpers for start/stop/status

# Runs a command as the user that owns the PostgreSQL cluster (postgres when we are root:
# PostgreSQL refuses to run as root).
as_pg() {
  if is_root; then runuser -u postgres -- "$@"; else "$@"; fi
}

# Name of the executable of a pid ("" if unknown).
exe_of() { basename "$(readlink "/proc/$1/exe" 2>/dev/null)" 2>/dev/null || true; }

# Our servers' executables (Debian's redis-server is a symlink to redis-check-rdb).
is_server_exe() {
  case "$(exe_of "$1")" in postgres | redis-server | redis-check-rdb | ferretdb | memcached) return 0 ;; *) return 1 ;; esac
}

# Processes of our servers (by executable) whose working directory or command line is under
# DIR, zombies excepted. One python3 process rather than several forks per /proc entry.
procs_under() {
  python3 - "$1" <<'EOF'
import os, sys
d = sys.argv[1].rstrip("/")
names = {"postgres", "redis-server", "redis-check-rdb", "ferretdb", "memcached"}
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        if os.path.basename(os.readlink("/proc/%s/exe" % pid)) not in names:
            continue
        with open("/proc/%s/stat" % pid) as f:
            if f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                continue
        cwd = os.readlink("/proc/%s/cwd" % pid)
        with open("/proc/%s/cmdline" % pid, "rb") as f:
            cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        continue
    if cwd == d or cwd.startswith(d + "/") or (d + "/") in cmd:
        print(pid)
EOF
}

# ---------------------------------------------------------------------------------------------
# start

start_postgres() {
  local dir="$1" port="$2" root="$1/postgres"
  local data="$root/data" sock="$root/run" logfile="$root/postgres.log"
  [ -x "$PG_BIN/initdb" ] || die "PostgreSQL: $PG_BIN/initdb missing: run scripts/servers.sh install"
  [ "${#sock}" -le 90 ] || die "PostgreSQL: the socket directory $sock is too long for a unix socket path: use a shorter DIR"
  mkdir -p "$root" "$sock"
  chmod 700 "$sock"
  echo "$port" >"$root/port"
  if is_root; then
    chown -R postgres:postgres "$root"
    if ! runuser -u postgres -- test -w "$root"; then
      chmod o+x "$dir" # let the postgres user traverse DIR (its parents must allow it too)
      runuser -u postgres -- test -w "$root" ||
        die "PostgreSQL: the postgres user cannot reach $root: use a DIR whose parent directories others may traverse (e.g. under /tmp)"
    fi
  fi
  local password
  password="$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
  echo "$password" >"$root/password"
  chmod 600 "$root/password"
  make_tls "$root/tls"
  (cd "$root" && as_pg "$PG_BIN/initdb" -D "$data" -U postgres -E UTF8 --locale=C \
    --auth-local=trust --auth-host=scram-sha-256 >"$root/initdb.log" 2>&1) ||
    fail_server PostgreSQL "$root/initdb.log" "initdb failed"
  # Local connections only through the socket in a directory only the cluster owner can enter;
  # TCP only on loopback, with a password (scram-sha-256).
  # The role storlab_tls may connect over TLS only (tests of the store's sslmode).
  as_pg tee "$data/pg_hba.conf" >/dev/null <<EOF
local all all trust
hostnossl all storlab_tls 127.0.0.1/32 reject
host all all 127.0.0.1/32 scram-sha-256
EOF
  as_pg tee -a "$data/postgresql.conf" >/dev/null <<EOF

# storlab scripts/servers.sh
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$sock'
password_encryption = 'scram-sha-256'
ssl = on
ssl_cert_file = '$root/tls/server.crt'
ssl_key_file = '$root/tls/server.key'
EOF
  (cd "$root" && as_pg "$PG_BIN/pg_ctl" -D "$data" -l "$logfile" -w -t "$START_TIMEOUT" start >"$root/pg_ctl.log" 2>&1) ||
    fail_server PostgreSQL "$logfile" "did not start on 127.0.0.1:$port (pg_ctl output: $root/pg_ctl.log)"
  # CREATEDB: tests of a results store in PostgreSQL make a database of their own each.
  (cd "$root" && as_pg "$PG_BIN/psql" -X -q -h "$sock" -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 \
    -c "CREATE ROLE $PG_USER LOGIN CREATEDB PASSWORD '$password'" \
    -c "CREATE DATABASE $PG_DB OWNER $PG_USER" \
    -c "CREATE ROLE storlab_tls LOGIN CREATEDB PASSWORD '$password'" \
    -c "CREATE DATABASE storlab_tls OWNER storlab_tls" >"$root/setup.log" 2>&1) ||
    fail_server PostgreSQL "$root/setup.log" "could not create user $PG_USER and database $PG_DB"
  local url="postgres://$PG_USER:$password@127.0.0.1:$port/$PG_DB?sslmode=disable"
  "$PG_BIN/psql" -X -q -At -d "$url" -c 'SELECT 1' >/dev/null 2>>"$root/setup.log" ||
    fail_server PostgreSQL "$root/setup.log" "does not accept $PG_USER with its password on 127.0.0.1:$port"
  echo "$url" >"$root/url"
  echo "postgres://storlab_tls:$password@127.0.0.1:$port/storlab_tls?sslmode=verify-full&sslrootcert=$root/tls/ca.crt" >"$root/tls_url"
}

# A certificate authority of this run and a server certificate it signed for 127.0.0.1 and
# localhost (ECDSA P-256, 30 days), in DIR: ca.crt for clients, server.crt and server.key
# (readable by the cluster's owner only) for PostgreSQL.
make_tls() {
  local tls="$1"
  mkdir -p "$tls"
  (
    cd "$tls" &&
      openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 30 \
        -subj "/CN=storlab test CA" -keyout ca.key -out ca.crt \
        -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" &&
      openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
        -subj "/CN=localhost" -keyout server.key -out server.csr &&
      printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n' >server.ext &&
      openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 \
        -extfile server.ext -out server.crt
  ) >"$tls/openssl.log" 2>&1 || die "PostgreSQL: making the TLS certificates failed (see $tls/openssl.log)"
  rm -f "$tls/ca.key" "$tls/server.csr"
  chmod 600 "$tls/server.key"
  if is_root; then chown postgres:postgres "$tls/server.key" "$tls/server.crt"; fi
}

start_redis() {
  local port="$2" root="$1/redis"
  local logfile="$root/redis.log" pidfile="$root/redis.pid" i
  command -v redis-server >/dev/null || die "Redis: redis-server missing: run scripts/servers.sh install"
  mkdir -p "$root"
  echo "$port" >"$root/port"
  cat >"$root/redis.conf" <<EOF
# storlab scripts/servers.sh: loopback only, no persistence
bind 127.0.0.1
port $port
protected-mode yes
daemonize yes
pidfile $pidfile
logfile $logfile
dir $root
save ""
appendonly no
EOF
  (cd "$root" && redis-server "$root/redis.conf" >"$root/redis-server.out" 2>&1) ||
    fail_server Redis "$logfile" "redis-server failed to start (output: $root/redis-server.out)"
  for ((i = 0; i < START_TIMEOUT * 10; i++)); do
    if [ "$(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null)" = PONG ]; then
      echo "redis://127.0.0.1:$port/0" >"$root/url"
      return 0
    fi
    if [ "$i" -gt 20 ] && ! alive "$(pidfile_pid "$pidfile")"; then
      fail_server Redis "$logfile" "exited before answering on 127.0.0.1:$port"
    fi
    sleep 0.1
  done
  fail_server Redis "$logfile" "did not answer PING on 127.0.0.1:$port within ${START_TIMEOUT}s"
}

# memcached_answers PORT: memcached on 127.0.0.1:PORT answers `version`.
memcached_answers() {
  python3 - "$1" <<'PY' 2>/dev/null
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1)
s.sendall(b"version\r\n")
sys.exit(0 if s.recv(64).startswith(b"VERSION ") else 1)
PY
}

start_memcached() {
  local port="$2" root="$1/memcached"
  local logfile="$root/memcached.log" pidfile="$root/memcached.pid" i
  command -v memcached >/dev/null || die "memcached: memcached missing: run scripts/servers.sh install"
  mkdir -p "$root"
  echo "$port" >"$root/port"
  # Loopback only, TCP only, 256 MiB of items; as root it runs as the nobody user, which
  # writes its pid file in DIR/memcached.
  local user=()
  if is_root; then
    user=(-u nobody)
    chown nobody "$root"
  fi
  (cd "$root" && memcached -d -l 127.0.0.1 -p "$port" -U 0 -m 256 -P "$pidfile" "${user[@]}" \
    >"$logfile" 2>&1) || fail_server memcached "$logfile" "memcached failed to start"
  for ((i = 0; i < START_TIMEOUT * 10; i++)); do
    if memcached_answers "$port"; then
      echo "memcache://127.0.0.1:$port" >"$root/url"
      return 0
    fi
    sleep 0.1
  done
  fail_server memcached "$logfile" "did not answer on 127.0.0.1:$port within ${START_TIMEOUT}s"
}

# The memory cgroup FerretDB runs in, for a study's `server-cgroup` (studies/ycsb-mongodb.toml
# holds it to a share of its database): cgroup v2's when its memory controller is there, else
# cgroup v1's memory hierarchy (a hybrid host's). Prints its path; nothing when neither can be
# made (not root, no memory controller): FerretDB then runs without one.
memory_cgroup() {
  local name r
  name="storlab-servers-$(printf '%s' "$1" | md5sum | cut -c1-6)-ferretdb"
  r="$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)"
  if [ -n "$r" ] && grep -qw memory "$r/cgroup.controllers" 2>/dev/null; then
    grep -qw memory "$r/cgroup.subtree_control" 2>/dev/null ||
      echo +memory >"$r/cgroup.subtree_control" 2>/dev/null || true
    if mkdir -p "$r/$name" 2>/dev/null && [ -e "$r/$name/memory.max" ]; then
      echo "$r/$name"
      return
    fi
  fi
  r="$(awk '$3 == "cgroup" && $4 ~ /(^|,)memory(,|$)/ { print $2; exit }' /proc/self/mounts)"
  if [ -n "$r" ] && mkdir -p "$r/$name" 2>/dev/null && [ -e "$r/$name/memory.limit_in_bytes" ]; then
    echo "$r/$name"
  fi
}

start_ferretdb() {
  local port="$2" root="$1/ferretdb"
  local logfile="$root/ferretdb.log" pidfile="$root/ferretdb.pid" i cgroup
  ferretdb_cached || die "FerretDB: $FERRETDB_BIN ($FERRETDB_VERSION) missing: run scripts/servers.sh install"
  mkdir -p "$root/data" "$root/state"
  echo "$port" >"$root/port"
  cgroup="$(memory_cgroup "$1")"
  echo "$cgroup" >"$root/cgroup"
  # In its own session, with no descriptor of ours (a caller piping our output must not wait
  # for FerretDB). The shell writes its own pid (and joins the memory cgroup), then becomes
  # FerretDB (exec): the pid file is right from the start, so stop can find a half-started
  # FerretDB.
  (
    cd "$root" || exit 1
    exec setsid sh -c 'echo $$ > "$0"; [ -z "$1" ] || echo $$ > "$1/cgroup.procs"; shift; exec "$@"' \
      "$pidfile" "$cgroup" "$FERRETDB_BIN" --listen-addr="127.0.0.1:$port" --handler=sqlite --sqlite-url="file:$root/data/" \
      --state-dir="$root/state" --telemetry=disable --debug-addr=- --log-level=info
  ) </dev/null >"$logfile" 2>&1 &
  for ((i = 0; i < START_TIMEOUT * 10; i++)); do
    if python3 "$SCRIPTS/mongo_hello.py" 127.0.0.1 "$port" >/dev/null 2>&1; then
      echo "mongodb://127.0.0.1:$port/" >"$root/url"
      return 0
    fi
    if [ "$i" -gt 5 ] && ! alive "$(pidfile_pid "$pidfile")"; then
      fail_server FerretDB "$logfile" "exited before answering on 127.0.0.1:$port"
    fi
    sleep 0.1
  done
  fail_server FerretDB "$logfile" "did not answer hello on 127.0.0.1:$port within ${START_TIMEOUT}s"
}

cmd_start() {
  local dir t
  dir="$(resolve_dir "${1:-}")"
  t="$(now)"
  # A leftover DIR (a run that crashed or was never stopped): stop what it has, start afresh.
  if [ -n "$(procs_under "$dir")" ]; then
    log "$dir has servers from an earlier start: stopping them"
    stop_all "$dir" || die "could not stop the servers left in $dir"
  else
    stop_all "$dir" quiet || die "could not stop the servers left in $dir"
  fi
  rm -rf "$dir/postgres" "$dir/redis" "$dir/ferretdb" "$dir/memcached"
  trap 'rc=$?; if [ "$rc" -ne 0 ]; then log "start failed: stopping what was started in '"$dir"'"; stop_all "'"$dir"'" quiet || true; fi' EXIT
  local pg_port redis_port ferret_port memcached_port
  pg_port="$(pick_port PostgreSQL 55432 "${STORLAB_PG_PORT:-}")"
  start_postgres "$dir" "$pg_port"
  redis_port="$(pick_port Redis 56379 "${STORLAB_REDIS_PORT:-}")"
  start_redis "$dir" "$redis_port"
  ferret_port="$(pick_port FerretDB 57017 "${STORLAB_FERRETDB_PORT:-}")"
  start_ferretdb "$dir" "$ferret_port"
  memcached_port="$(pick_port memcached 51211 "${STORLAB_MEMCACHED_PORT:-}")"
  start_memcached "$dir" "$memcached_port"
  {
    echo "# written by scripts/servers.sh start $dir"
    # Values have no quotes or spaces (DIR is checked, the password is hex): plain single quotes.
    printf "export STORLAB_SERVERS_DIR='%s'\n" "$dir"
    printf "export STORLAB_TEST_POSTGRES_URL='%s'\n" "$(cat "$dir/postgres/url")"
    printf "export STORLAB_TEST_POSTGRES_TLS_URL='%s'\n" "$(cat "$dir/postgres/tls_url")"
    printf "export STORLAB_TEST_REDIS_URL='%s'\n" "$(cat "$dir/redis/url")"
    printf "export STORLAB_TEST_MONGODB_URL='%s'\n" "$(cat "$dir/ferretdb/url")"
    printf "export STORLAB_TEST_POSTGRES_PID='%s'\n" "$(pidfile_pid "$dir/postgres/data/postmaster.pid")"
    printf "export STORLAB_TEST_REDIS_PID='%s'\n" "$(pidfile_pid "$dir/redis/redis.pid")"
    printf "export STORLAB_TEST_MONGODB_PID='%s'\n" "$(pidfile_pid "$dir/ferretdb/ferretdb.pid")"
    printf "export STORLAB_TEST_MONGODB_CGROUP='%s'\n" "$(cat "$dir/ferretdb/cgroup")"
    printf "export STORLAB_TEST_MEMCACHED_URL='%s'\n" "$(cat "$dir/memcached/url")"
  } >"$dir/env.sh.tmp"
  mv -f "$dir/env.sh.tmp" "$dir/env.sh"
  trap - EXIT
  log "started in $(elapsed "$t") s: PostgreSQL 127.0.0.1:$pg_port, Redis 127.0.0.1:$redis_port, FerretDB 127.0.0.1:$ferret_port, memcached 127.0.0.1:$memcached_port"
  log "environment: . $dir/env.sh"
}

# ---------------------------------------------------------------------------------------------
# stop

# stop_all DIR [quiet]: stops FerretDB, Redis and PostgreSQL under DIR, then any other server
# process still working under DIR. Returns 1 if a process survives SIGKILL.
stop_all() {
  local dir="$1" quiet="${2:-}" pid ok=0
  rm -f "$dir/env.sh" "$dir/env.sh.tmp"

  pid="$(pidfile_pid "$dir/ferretdb/ferretdb.pid")"
  if alive "$pid" && [ "$(exe_of "$pid")" = ferretdb ]; then
    [ -n "$quiet" ] || log "FerretDB: stopping pid $pid"
    term_wait FerretDB "$pid" || ok=1
  fi
  # Its memory cgroup, once empty (rmdir refuses one that still has a process).
  local cgroup
  cgroup="$(cat "$dir/ferretdb/cgroup" 2>/dev/null || true)"
  [ -z "$cgroup" ] || [ ! -d "$cgroup" ] || rmdir "$cgroup" 2>/dev/null || true

  pid="$(pidfile_pid "$dir/memcached/memcached.pid")"
  if alive "$pid" && [ "$(exe_of "$pid")" = memcached ]; then
    [ -n "$quiet" ] || log "memcached: stopping pid $pid"
    term_wait memcached "$pid" || ok=1
  fi

  pid="$(pidfile_pid "$dir/redis/redis.pid")"
  if alive "$pid" && is_server_exe "$pid"; then
    [ -n "$quiet" ] || log "Redis: stopping pid $pid"
    term_wait Redis "$pid" || ok=1
  fi

  local data="$dir/postgres/data"
  pid="$(pidfile_pid "$data/postmaster.pid")"
  if alive "$pid" && [ "$(exe_of "$pid")" = postgres ]; then
    [ -n "$quiet" ] || log "PostgreSQL: stopping pid $pid"
    if ! (cd "$dir/postgres" && as_pg "$PG_BIN/pg_ctl" -D "$data" -m fast -w -t "$STOP_TIMEOUT" stop >/dev/null 2>&1); then
      log "PostgreSQL: pg_ctl stop failed, signalling pid $pid"
      term_wait PostgreSQL "$pid" || ok=1
    fi
  fi

  # Whatever is left: a server whose pid file was not written yet, backends of a killed
  # postmaster, a server started by hand with DIR's files.
  local left
  mapfile -t left < <(procs_under "$dir")
  if [ "${#left[@]}" -gt 0 ]; then
    log "stopping leftover server processes under $dir: ${left[*]}"
    term_wait leftover "${left[@]}" || ok=1
  fi
  mapfile -t left < <(procs_under "$dir")
  if [ "${#left[@]}" -gt 0 ]; then
    log "error: server processes under $dir survive: ${left[*]}"
    ok=1
  fi
  return "$ok"
}

cmd_stop() { stop_under "${1:-}" "some processes" "no server process"; }

# ---------------------------------------------------------------------------------------------
# status

cmd_status() {
  local dir pid port ok=0
  [ -n "${1:-}" ] || usage
  [ -d "$1" ] || die "$1: no such directory"
  dir="$(resolve_dir "$1")"

  pid="$(pidfile_pid "$dir/postgres/data/postmaster.pid")"
  port="$(cat "$dir/postgres/port" 2>/dev/null || true)"
  if alive "$pid" && [ -n "$port" ] && "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$port"; then
    echo "PostgreSQL  running   pid $pid  127.0.0.1:$port  log $dir/postgres/postgres.log"
  else
    echo "PostgreSQL  not ready pid ${pid:-none}  port ${port:-none}  log $dir/postgres/postgres.log"
    ok=1
  fi

  pid="$(pidfile_pid "$dir/redis/redis.pid")"
  port="$(cat "$dir/redis/port" 2>/dev/null || true)"
  if alive "$pid" && [ -n "$port" ] && [ "$(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null)" = PONG ]; then
    echo "Redis       running   pid $pid  127.0.0.1:$port  log $dir/redis/redis.log"
  else
    echo "Redis       not ready pid ${pid:-none}  port ${port:-none}  log $dir/redis/redis.log"
    ok=1
  fi

  pid="$(pidfile_pid "$dir/ferretdb/ferretdb.pid")"
  port="$(cat "$dir/ferretdb/port" 2>/dev/null || true)"
  if alive "$pid" && [ -n "$port" ] && python3 "$SCRIPTS/mongo_hello.py" 127.0.0.1 "$port" >/dev/null 2>&1; then
    echo "FerretDB    running   pid $pid  127.0.0.1:$port  log $dir/ferretdb/ferretdb.log"
  else
    echo "FerretDB    not ready pid ${pid:-none}  port ${port:-none}  log $dir/ferretdb/ferretdb.log"
    ok=1
  fi

  pid="$(pidfile_pid "$dir/memcached/memcached.pid")"
  port="$(cat "$dir/memcached/port" 2>/dev/null || true)"
  if alive "$pid" && [ -n "$port" ] && memcached_answers "$port"; then
    echo "memcached   running   pid $pid  127.0.0.1:$port  log $dir/memcached/memcached.log"
  else
    echo "memcached   not ready pid ${pid:-none}  port ${port:-none}  log $dir/memcached/memcached.log"
    ok=1
  fi

  if [ -f "$dir/env.sh" ]; then echo "environment: . $dir/env.sh"; fi
  return "$ok"
}

# ---------------------------------------------------------------------------------------------
# selftest

cmd_selftest() {
  local dir t
  t="$(now)"
  dir="$(mktemp -d /tmp/storlab-servers-selftest.XXXXXX)"
  chmod 755 "$dir"
  trap 'bash "$SELF" stop "'"$dir"'" >/dev/null 2>&1 || true; rm -rf "'"$dir"'"' EXIT
  bash "$SELF" start "$dir"
  # shellcheck disable=SC1091
  . "$dir/env.sh"
  bash "$SELF" status "$dir" >/dev/null || die "selftest: status says not all servers are ready"

  local got
  got="$("$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -d "$STORLAB_TEST_POSTGRES_URL" \
    -c 'CREATE TABLE selftest (k text PRIMARY KEY, v text)' \
    -c "INSERT INTO selftest VALUES ('k1', 'hello')" \
    -c "SELECT v FROM selftest WHERE k = 'k1'" \
    -c 'DROP TABLE selftest')" || die "selftest: PostgreSQL round trip failed (log: $dir/postgres/postgres.log)"
  [ "$got" = hello ] || die "selftest: PostgreSQL returned '$got'"
  local wrong="${STORLAB_TEST_POSTGRES_URL/:[0-9a-f]*@/:wrong-password@}"
  if "$PG_BIN/psql" -X -q -At -d "$wrong" -c 'SELECT 1' >/dev/null 2>&1; then
    die "selftest: PostgreSQL accepted a wrong password"
  fi
  log "selftest: PostgreSQL ok (psql round trip; a wrong password is refused)"

  redis-cli -u "$STORLAB_TEST_REDIS_URL" set storlab:selftest hello >/dev/null
  got="$(redis-cli -u "$STORLAB_TEST_REDIS_URL" get storlab:selftest)"
  [ "$got" = hello ] || die "selftest: Redis returned '$got' (log: $dir/redis/redis.log)"
  redis-cli -u "$STORLAB_TEST_REDIS_URL" del storlab:selftest >/dev/null
  log "selftest: Redis ok (redis-cli round trip)"

  local mport="${STORLAB_TEST_MONGODB_URL##*:}"
  mport="${mport%/}"
  python3 "$SCRIPTS/mongo_hello.py" 127.0.0.1 "$mport" --roundtrip >/dev/null ||
    die "selftest: FerretDB hello/insert/find failed (log: $dir/ferretdb/ferretdb.log)"
  log "selftest: FerretDB ok (OP_MSG hello, insert, find)"

  local pids=("$STORLAB_TEST_POSTGRES_PID" "$STORLAB_TEST_REDIS_PID" "$STORLAB_TEST_MONGODB_PID")
  bash "$SELF" stop "$dir"
  local pid left=()
  for pid in "${pids[@]}"; do alive "$pid" && left+=("$pid"); done
  mapfile -t -O "${#left[@]}" left < <(procs_under "$dir")
  [ "${#left[@]}" -eq 0 ] || die "selftest: processes left after stop: ${left[*]}"
  for port in "${STORLAB_TEST_POSTGRES_URL##*@127.0.0.1:}" "$mport" "${STORLAB_TEST_REDIS_URL##*:}"; do
    port="${port%%/*}"
    port_free "$port" || die "selftest: port $port still in use after stop"
  done
  [ ! -e "$dir/env.sh" ] || die "selftest: env.sh left after stop"
  log "selftest: passed in $(elapsed "$t") s (no process left, ports free)"
}

case "${1:-}" in
  install) cmd_install ;;
  start) cmd_start "${2:-}" ;;
  stop) cmd_stop "${2:-}" ;;
  status) cmd_status "${2:-}" ;;
  selftest) cmd_selftest ;;
  *) usage ;;
esac
