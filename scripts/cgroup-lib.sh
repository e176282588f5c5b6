# shellcheck shell=bash
# A node's group: its processes and the limits that bound its capacity (CPU bandwidth, disk
# bandwidth and IOPS, memory), on cgroup v2 where its controllers are, else on cgroup v1's
# hierarchies (a hybrid host: here, the memory, cpu and blkio controllers are v1's and the v2
# mount has none, but it still gives cgroup.kill). Sourced after scripts/tools-lib.sh (die, log).
# For the HCI cluster's nodes (each bounded, so that where a tenant runs decides its
# throughput); `bench/node-limits` measures what each limit does on this kernel.
#
#   cg_create NAME          the group, in every hierarchy it will use (idempotent)
#   cg_add NAME PID         PID (and its future children) into it
#   cg_join PARENT CHILD PID  PID into PARENT/CHILD (created), except in v1's blkio hierarchy,
#                           where it goes into PARENT: v1's blkio throttling is not
#                           hierarchical (measured here: a child of a group allowed 5 MB/s
#                           wrote at 443 MB/s, and its bytes were not counted in the parent),
#                           so a node's disk limit holds only for processes in the node's own
#                           group; CPU and memory are hierarchical, so PARENT's limits bound
#                           CHILD and CHILD's use is counted apart
#   cg_cpu NAME CPUS        at most CPUS CPUs of time (0.5: half of one), per 100 ms period
#   cg_io NAME DEV RBPS WBPS [RIOPS WIOPS]  disk bandwidth (bytes/s) and IOPS on block device
#                           DEV (a path); 0: no limit. v1 throttles only I/O the group issues
#                           itself (O_DIRECT, reads): buffered writes are written back by the
#                           kernel's flusher, outside the group, and are not throttled
#   cg_mem NAME BYTES       memory (page cache included) above which the group reclaims, then
#                           is OOM-killed
#   cg_pids NAME            its processes, its child groups' included
#   cg_kill NAME [WAIT]     SIGKILL to every process of it at once (cgroup.kill), waiting up to
#                           WAIT seconds until it is empty (exit 1 if not)
#   cg_usage NAME           "cpu_usec=N read_bytes=N write_bytes=N": what it used so far
#   cg_remove NAME          the group gone (it must be empty)
#   cg_describe             which hierarchy holds each controller, for a report's disclosure
# cg_kill uses cgroup.kill (v2, Linux 5.14) when the group's v2 directory has it, else SIGKILL to
# each process listed.

# The cgroup2 mount, and a v1 hierarchy's mount for controller $1 (empty if none).
cg_v2() { awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts; }
cg_v1() { awk -v c="$1" '$3 == "cgroup" && $4 ~ "(^|,)" c "(,|$)" { print $2; exit }' /proc/self/mounts; }

# cg_where CONTROLLER: the directory that holds CONTROLLER's groups: "v2 PATH" when the v2 mount
# has it (enabled for the root's children first), else "v1 PATH", else nothing.
cg_where() {
  local v2 v1
  v2="$(cg_v2)"
  if [ -n "$v2" ] && grep -qw "$1" "$v2/cgroup.controllers" 2>/dev/null; then
    grep -qw "$1" "$v2/cgroup.subtree_control" 2>/dev/null ||
      echo "+$1" >"$v2/cgroup.subtree_control" 2>/dev/null || true
    echo "v2 $v2"
    return
  fi
  v1="$(cg_v1 "$1")"
  [ -z "$v1" ] || echo "v1 $v1"
}

# cg_v1_for CONTROLLER: the v1 hierarchy a v1 controller's groups live in, when v2 does not
# serve it (cpu and cpuacct go with v2's cpu, blkio with v2's io, memory with memory).
cg_v1_for() {
  local v2name="$1"
  case "$1" in cpuacct) v2name=cpu ;; blkio) v2name=io ;; esac
  [ "$(cg_where "$v2name" | cut -d' ' -f1)" != v2 ] || return 0
  cg_v1 "$1"
}

# cg_dirs NAME: every directory of the group (the v2 one first), one per line.
cg_dirs() {
  local c m v2 seen=" "
  v2="$(cg_v2)"
  [ -z "$v2" ] || echo "$v2/$1"
  for c in cpu cpuacct memory blkio; do
    m="$(cg_v1_for "$c")"
    [ -n "$m" ] || continue
    case "$seen" in *" $m "*) continue ;; esac
    seen="$seen$m "
    echo "$m/$1"
  done
}

cg_create() {
  local d
  while read -r d; do mkdir -p "$d" || die "cannot create cgroup $d"; done < <(cg_dirs "$1")
}

cg_add() {
  local d
  while read -r d; do echo "$2" >"$d/cgroup.procs" || die "cannot move $2 into $d"; done < <(cg_dirs "$1")
}

cg_join() {
  local d flat
  flat="$(cg_v1_for blkio)"
  cg_create "$1/$2"
  while read -r d; do
    [ -z "$flat" ] || [ "$d" != "$flat/$1/$2" ] || d="$flat/$1"
    echo "$3" >"$d/cgroup.procs" || die "cannot move $3 into $d"
  done < <(cg_dirs "$1/$2")
}

cg_cpu() {
  local quota w
  quota="$(awk -v c="$2" 'BEGIN { printf "%d", c * 100000 }')"
  [ "$quota" -gt 0 ] || die "cg_cpu: CPUS must be above 0 (got '$2')"
  w="$(cg_where cpu)"
  case "${w%% *}" in
  v2) echo "$quota 100000" >"${w#v2 }/$1/cpu.max" ;;
  v1)
    echo 100000 >"${w#v1 }/$1/cpu.cfs_period_us"
    echo "$quota" >"${w#v1 }/$1/cpu.cfs_quota_us"
    ;;
  *) die "no cpu controller on this host" ;;
  esac
}

# cg_io NAME DEV RBPS WBPS [RIOPS WIOPS]
cg_io() {
  local name="$1" dev="$2" majmin ri="${5:-0}" wi="${6:-0}" w m f
  majmin="$(printf '%d:%d' "0x$(stat -L -c %t "$dev")" "0x$(stat -L -c %T "$dev")")" ||
    die "cg_io: $dev is not a block device"
  w="$(cg_where io)"
  if [ "${w%% *}" = v2 ]; then
    echo "$majmin rbps=$(cg_max "$3") wbps=$(cg_max "$4") riops=$(cg_max "$ri") wiops=$(cg_max "$wi")" >"${w#v2 }/$name/io.max"
    return
  fi
  m="$(cg_v1 blkio)"
  [ -n "$m" ] || die "no io (v2) or blkio (v1) controller on this host"
  for f in "read_bps_device $3" "write_bps_device $4" "read_iops_device $ri" "write_iops_device $wi"; do
    echo "$majmin ${f#* }" >"$m/$name/blkio.throttle.${f%% *}"
  done
}
cg_max() { if [ "$1" = 0 ]; then echo max; else echo "$1"; fi; }

cg_mem() {
  local w
  w="$(cg_where memory)"
  case "${w%% *}" in
  v2) echo "$2" >"${w#v2 }/$1/memory.max" ;;
  v1) echo "$2" >"${w#v1 }/$1/memory.limit_in_bytes" ;;
  *) die "no memory controller on this host" ;;
  esac
}

cg_pids() {
  local d
  d="$(cg_dirs "$1" | head -n1)"
  [ -d "$d" ] || return 0
  find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null || true
}

cg_kill() {
  local d i pid
  d="$(cg_dirs "$1" | head -n1)"
  if [ -e "$d/cgroup.kill" ]; then
    echo 1 >"$d/cgroup.kill"
  else
    for pid in $(cg_pids "$1"); do kill -KILL "$pid" 2>/dev/null || true; done
  fi
  [ -n "${2:-}" ] || return 0
  for ((i = 0; i < $2 * 20; i++)); do
    [ -n "$(cg_pids "$1")" ] || return 0
    sleep 0.05
  done
  return 1
}

# cg_usage NAME: CPU time and bytes read and written by the group so far (all devices).
cg_usage() {
  local w cpu=0 rb=0 wb=0
  w="$(cg_where cpu)"
  case "${w%% *}" in
  v2) cpu="$(awk '$1 == "usage_usec" { print $2 }' "${w#v2 }/$1/cpu.stat" 2>/dev/null)" ;;
  *)
    local acct
    acct="$(cg_v1_for cpuacct)"
    [ -z "$acct" ] || cpu="$(($(cat "$acct/$1/cpuacct.usage" 2>/dev/null || echo 0) / 1000))"
    ;;
  esac
  w="$(cg_where io)"
  if [ "${w%% *}" = v2 ]; then
    read -r rb wb < <(awk '{ for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "rbytes") r += kv[2]; if (kv[1] == "wbytes") w += kv[2] } } END { print r + 0, w + 0 }' "${w#v2 }/$1/io.stat" 2>/dev/null)
  elif [ -n "$(cg_v1_for blkio)" ]; then
    read -r rb wb < <(awk '$2 == "Read" { r += $3 } $2 == "Write" { w += $3 } END { print r + 0, w + 0 }' "$(cg_v1_for blkio)/$1/blkio.throttle.io_service_bytes" 2>/dev/null)
  fi
  echo "cpu_usec=${cpu:-0} read_bytes=${rb:-0} write_bytes=${wb:-0}"
}

cg_remove() {
  local d
  while read -r d; do [ ! -d "$d" ] || rmdir "$d" 2>/dev/null || return 1; done < <(cg_dirs "$1")
}

cg_describe() {
  local c w
  for c in cpu io memory; do
    w="$(cg_where "$c")"
    [ -n "$w" ] || [ "$c" != io ] || { [ -z "$(cg_v1 blkio)" ] || w="v1 $(cg_v1 blkio) (blkio)"; }
    echo "$c: ${w:-none}"
  done
}
