#!/usr/bin/env bash
# The TPCx-HCI brief's cluster in miniature: equal nodes of bounded capacity, each with its own
# disk, and a PostgreSQL 15 / Patroni 3.0 cluster per tenant (a primary and one replica on
# another node: vSAN's one failure to tolerate), placed on the nodes; a placement daemon that
# copies a lost member's data back onto a surviving node and, once enabled, balances the load.
#
#   scripts/hci.sh install              install what is missing (idempotent; needs root)
#   scripts/hci.sh start DIR [OPTIONS]  start the nodes, the tenants and the placement daemon
#                                       under DIR (fresh), wait until every tenant is redundant,
#                                       write DIR/env.sh
#       --nodes 4  --tenants 4          nodes and tenants
#       --cpus 0.3                      each node's CPU time (CPUs, per 100 ms period)
#       --mem 1536M                     each node's memory (page cache included)
#       --disk 4G  --disk-mbps 40  --disk-iops 0   each node's disk: size, read and write
#                                       bandwidth (MB/s) and IOPS (0: no limit)
#       --empty 1                       nodes left empty at the start (the last ones)
#   scripts/hci.sh stop DIR             stop everything started under DIR (also half-started)
#   scripts/hci.sh status DIR           nodes, members, roles, redundancy (exit 1 unless redundant)
#   scripts/hci.sh redundant DIR        exit 0 only when every tenant has a primary and a
#                                       streaming synchronous replica on two live nodes, and no
#                                       copy is running (a `wait-for` command); prints the data
#                                       copied since the last power-off
#   scripts/hci.sh power-off DIR NODE   the node lost with its data: links down, every process
#                                       of its group killed at once (cgroup.kill), its disk
#                                       detached and its file deleted
#   scripts/hci.sh balancer DIR none|script|pacemaker [--after SECONDS] [--policy PATH]
#                                       stop balancing (once a move under way has ended); or
#                                       balance with the policy script (default
#                                       scripts/hci/balance-policy) from SECONDS from now; or
#                                       with real Pacemaker and Corosync in every live node,
#                                       placing the tenants' primaries by their CPU use
#                                       (utilization), managing them from SECONDS from now
#                                       (scripts/hci/pacemaker.sh); the other modes stop it
#   scripts/hci.sh move DIR TENANT NODE the tenant's primary to NODE, as a balancer moves it
#                                       (a switchover, or a copy first); returns once done
#   scripts/hci.sh place DIR initial    every primary back where `start` put it
#   scripts/hci.sh pcmk DIR CMD...      CMD (crm_mon -1, crm_resource...) in a node running
#                                       Pacemaker
#   scripts/hci.sh watch DIR [--every 1]  per node CPU and disk use every SECONDS, and the
#                                       daemon's moves and copies as they end (a `sample` event)
#   scripts/hci.sh url DIR TENANT       the tenant's libpq URL (every node; read-write session)
#   scripts/hci.sh add-member DIR TENANT NODE | remove-member DIR TENANT NODE
#                                       the mechanism the daemon uses (by hand: at your risk)
#
# Layout: a bridge shcHHHHHH (HHHHHH: from DIR) with the host at 10.214.X.1/24; etcd in
# namespace shc-HHHHHH-dcs at 10.214.X.10 (outside every node: the DCS is the witness, not
# under test); node N in namespace shc-HHHHHH-nodeN at 10.214.X.(10+N), in cgroup
# storlab-hci-HHHHHH/nodeN (its CPU, memory and disk limits; each member in a child group
# nodeN/tT, so its CPU use is counted apart), with its disk: a loop device (direct I/O) over
# DIR/disks/nodeN.img, ext4, mounted on DIR/nodeN/disk. Tenant T's members are named tT-nodeN,
# PostgreSQL on port 5500+T and Patroni's REST API on 8000+T of their node's address, data on
# the node's disk. DIR/members lists the members (tenant and node per line); DIR/spans.log the
# daemon's moves and copies, one `span START END NAME ...` line each (scripts/hci/placement.py).
set -euo pipefail
SCRIPTS="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=scripts/tools-lib.sh
. "$SCRIPTS/tools-lib.sh"
# shellcheck source=scripts/netns-lib.sh
. "$SCRIPTS/netns-lib.sh"
# shellcheck source=scripts/patroni-lib.sh
. "$SCRIPTS/patroni-lib.sh"
# shellcheck source=scripts/cgroup-lib.sh
. "$SCRIPTS/cgroup-lib.sh"
# shellcheck source=scripts/pcmk-lib.sh
. "$SCRIPTS/pcmk-lib.sh"

PG_BIN="${STORLAB_PG_BIN:-/usr/lib/postgresql/15/bin}"
PG_USER=storlab
PG_DB=ycsb
START_TIMEOUT="${STORLAB_HCI_START_TIMEOUT:-240}" # seconds until every tenant is redundant
STOP_TIMEOUT=10
PLACEMENT="$SCRIPTS/hci/placement.py"
# shellcheck source=scripts/hci/pacemaker.sh
. "$SCRIPTS/hci/pacemaker.sh"

usage() {
  sed -n '7,43p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

cmd_install() {
  # Pacemaker and Corosync for `balancer pacemaker` (their system services left disabled).
  "$SCRIPTS/pacemaker.sh" install
  apt_install patroni etcd-server etcd-client python3-etcd postgresql-15 postgresql-client-15 iproute2 util-linux e2fsprogs python3
}

# ---------------------------------------------------------------------------------------------
# names

bridge_of() { echo "shc$(dir_hash "$1")"; }
ns_of() { echo "shc-$(dir_hash "$1")-$2"; }   # DIR NODE|dcs
veth_of() { echo "shc$(dir_hash "$1")-${2#node}"; } # DIR NODE|dcs: host end
group_of() { echo "storlab-hci-$(dir_hash "$1")/$2"; }
node_ip() { # DIR NODE|dcs
  local x
  x="$(cat "$1/subnet")"
  case "$2" in dcs) echo "10.214.$x.10" ;; node*) echo "10.214.$x.$((10 + ${2#node}))" ;; esac
}
nodes_of() { seq 1 "$(cat "$1/nodes")" | sed 's/^/node/'; }
member_root() { echo "$1/$3/$2"; } # DIR TENANT NODE: the member's config, logs, sockets
member_data() { echo "$1/$3/disk/$2"; }

# ---------------------------------------------------------------------------------------------
# nodes

# node_up DIR NODE DISK_BYTES: namespace, link, cgroup with its limits, disk mounted.
node_up() {
  local dir="$1" node="$2" ns loop img="$1/disks/$2.img"
  ns="$(ns_of "$dir" "$node")"
  ip netns add "$ns"
  veth_to_bridge "$ns" "$(veth_of "$dir" "$node")" "$(bridge_of "$dir")" eth0 "$(node_ip "$dir" "$node")/24"
  mkdir -p "$dir/disks" "$dir/$node/disk"
  truncate -s "$3" "$img"
  loop="$(losetup -f --show --direct-io=on "$img")"
  echo "$loop" >"$dir/$node/loop"
  mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$loop"
  mount "$loop" "$dir/$node/disk"
  chown postgres:postgres "$dir/$node/disk"
  local g
  g="$(group_of "$dir" "$node")"
  cg_create "$g"
  cg_cpu "$g" "$(cat "$dir/cpus")"
  cg_mem "$g" "$(cat "$dir/mem")"
  read -r mbps iops <"$dir/disk-limits"
  cg_io "$g" "$loop" "$((mbps * 1000000))" "$((mbps * 1000000))" "$iops" "$iops"
}

# node_disk_away DIR NODE: unmount the node's disk (lazily if something still holds it), detach
# its loop device and delete its file: the data is gone with the node.
node_disk_away() {
  local dir="$1" node="$2" loop
  if mountpoint -q "$dir/$node/disk"; then umount "$dir/$node/disk" 2>/dev/null || umount -l "$dir/$node/disk"; fi
  loop="$(cat "$dir/$node/loop" 2>/dev/null || true)"
  if [ -n "$loop" ] && losetup "$loop" 2>/dev/null | grep -qF "$dir/disks/$node.img"; then losetup -d "$loop"; fi
  rm -f "$dir/disks/$node.img" "$dir/$node/loop"
}

# ---------------------------------------------------------------------------------------------
# members

# cmd_add_member DIR TENANT NODE: the tenant's Patroni member on the node; it bootstraps the
# tenant when it is the first, else copies the leader's data (pg_basebackup). Returns at once.
cmd_add_member() {
  local dir="$1" t="$2" node="$3" root data ns n g
  [ -e "$dir/$node/off" ] && die "$node is powered off"
  n="${t#t}"
  root="$(member_root "$dir" "$t" "$node")"
  data="$(member_data "$dir" "$t" "$node")"
  ns="$(ns_of "$dir" "$node")"
  mkdir -p "$root/run" "$root/pglog"
  patroni_conf "$root/patroni.yml" "note=scripts/hci.sh: tenant $t on $node" \
    "scope=storlab-hci-$(dir_hash "$dir")-$t" "name=$t-$node" "ip=$(node_ip "$dir" "$node")" \
    "rest=$((8000 + n))" "pg=$((5500 + n))" "data=$data" "run=$root/run" "pglog=$root/pglog" \
    "dcs=$(node_ip "$dir" dcs)" "subnet=$(cat "$dir/subnet")" "secrets=$dir" \
    "post=$dir/post-bootstrap.sh" shared-buffers=32MB
  chown -R postgres:postgres "$root"
  chmod 700 "$root/run"
  g="$(group_of "$dir" "$node")"
  cg_create "$g/$t"
  members_edit add "$dir" "$t" "$node"
  # A subshell joins the member's group on the host (`ip netns exec` mounts a sysfs of its own,
  # without the cgroup hierarchies), then becomes the namespace's Patroni (as postgres): every
  # process of the member is in the group from the start.
  (
    cg_join "$g" "$t" "$BASHPID"
    # shellcheck disable=SC2016 # $$ and $1 are the inner shell's
    exec ip netns exec "$ns" setsid setpriv --reuid=postgres --regid=postgres --init-groups \
      sh -c 'echo $$ > "$0"; exec patroni "$1"' "$root/patroni.pid" "$root/patroni.yml"
  ) </dev/null >>"$root/patroni.log" 2>&1 &
}

# cmd_remove_member DIR TENANT NODE: the member stopped (SIGTERM, SIGKILL after 10 s), its
# data deleted, out of DIR/members.
cmd_remove_member() {
  local dir="$1" t="$2" node="$3" root pid
  root="$(member_root "$dir" "$t" "$node")"
  pid="$(pidfile_pid "$root/patroni.pid")"
  if alive "$pid"; then term_wait "patroni $t-$node" "$pid" || true; fi
  cg_kill "$(group_of "$dir" "$node")/$t" 5 || true
  members_edit remove "$dir" "$t" "$node"
  rm -rf "$(member_data "$dir" "$t" "$node")"
}

# members_edit add|remove DIR TENANT NODE, under DIR/members.lock.
members_edit() {
  local op="$1" dir="$2" line="$3 $4"
  (
    flock -w 10 9 || die "DIR/members.lock held for 10 s"
    touch "$dir/members"
    grep -vxF "$line" "$dir/members" >"$dir/members.tmp" || true
    [ "$op" = remove ] || echo "$line" >>"$dir/members.tmp"
    mv -f "$dir/members.tmp" "$dir/members"
  ) 9>>"$dir/members.lock"
}

# ---------------------------------------------------------------------------------------------
# start

# parse_start DIR OPTIONS...: the options into DIR's files (nodes, tenants, cpus, mem,
# disk-limits, disk, empty).
parse_start() {
  local dir="$1" nodes=4 tenants=4 cpus=0.3 mem=1536M disk=4G mbps=40 iops=0 empty=1
  shift
  while [ $# -gt 0 ]; do
    [ $# -ge 2 ] || die "option $1 needs a value"
    case "$1" in
    --nodes) nodes="$2" ;;
    --tenants) tenants="$2" ;;
    --cpus) cpus="$2" ;;
    --mem) mem="$2" ;;
    --disk) disk="$2" ;;
    --disk-mbps) mbps="$2" ;;
    --disk-iops) iops="$2" ;;
    --empty) empty="$2" ;;
    *) die "unknown option $1 (scripts/hci.sh with no arguments lists them)" ;;
    esac
    shift 2
  done
  if [ "$nodes" -lt 2 ] || [ "$nodes" -gt 9 ]; then die "--nodes must be 2 to 9 (got $nodes)"; fi
  if [ "$tenants" -lt 1 ] || [ "$tenants" -gt 99 ]; then die "--tenants must be 1 to 99 (got $tenants)"; fi
  if [ "$empty" -lt 0 ] || [ $((nodes - empty)) -lt 2 ]; then die "--empty $empty leaves fewer than 2 nodes for the tenants"; fi
  dir_hash "$dir" >"$dir/hash"
  echo "$nodes" >"$dir/nodes"
  echo "$tenants" >"$dir/tenants"
  echo "$cpus" >"$dir/cpus"
  numfmt --from=iec "$mem" >"$dir/mem" || die "--mem $mem: not a size (e.g. 1536M)"
  numfmt --from=iec "$disk" >"$dir/disk" || die "--disk $disk: not a size (e.g. 4G)"
  echo "$mbps $iops" >"$dir/disk-limits"
  echo "$empty" >"$dir/empty"
}

# initial_placement DIR: tenant T's primary on node ((T-1) mod U)+1 and its replica on the next,
# U the nodes not left empty. Prints "tT primary-node replica-node" lines.
initial_placement() {
  local u t p
  u=$(($(cat "$1/nodes") - $(cat "$1/empty")))
  for ((t = 1; t <= $(cat "$1/tenants"); t++)); do
    p=$(((t - 1) % u + 1))
    echo "t$t node$p node$((p % u + 1))"
  done
}

cmd_start() {
  local dir t t0
  is_root || die "namespaces, cgroups and loop devices need root"
  [ -x "$PG_BIN/initdb" ] || die "PostgreSQL 15 binaries not found in $PG_BIN: run scripts/hci.sh install"
  command -v patroni >/dev/null || die "patroni missing: run scripts/hci.sh install"
  dir="$(resolve_dir "${1:-}")"
  shift
  [ "${#dir}" -le 60 ] || die "DIR '$dir' is too long for PostgreSQL's unix socket path: use a shorter DIR"
  t0="$(now)"
  stop_all "$dir" quiet || die "could not stop the cluster left in $dir"
  rm -rf "${dir:?}"/{dcs,node?,disks,members,members.lock,spans.log,*-password,post-bootstrap.sh,subnet,placement.*,balancer,pcmk,requests,fencing.log}
  parse_start "$dir" "$@"
  trap 'rc=$?; if [ "$rc" -ne 0 ]; then log "start failed: stopping what was started in '"$dir"'"; stop_all "'"$dir"'" quiet || true; fi' EXIT
  chmod o+x "$dir"
  runuser -u postgres -- test -x "$dir" ||
    die "the postgres user cannot reach $dir: use a DIR whose parent directories others may traverse (e.g. under /tmp)"
  local x br node
  br="$(bridge_of "$dir")"
  x="$(bridge_subnet "$dir" 10.214 "$br")"
  ip netns add "$(ns_of "$dir" dcs)"
  veth_to_bridge "$(ns_of "$dir" dcs)" "$(veth_of "$dir" dcs)" "$br" eth0 "$(node_ip "$dir" dcs)/24"
  while read -r node; do node_up "$dir" "$node" "$(cat "$dir/disk")"; done < <(nodes_of "$dir")
  patroni_secrets "$dir" "$PG_USER" "$PG_DB"
  etcd_start "$dir/dcs" "$(ns_of "$dir" dcs)" "$(node_ip "$dir" dcs)"
  # Primaries first (each bootstraps its tenant there), then the replicas copy them.
  local p r why=""
  while read -r t p r; do cmd_add_member "$dir" "$t" "$p"; done < <(initial_placement "$dir")
  wait_until "$dir" leaders "every tenant's primary" >/dev/null
  while read -r t p r; do cmd_add_member "$dir" "$t" "$r"; done < <(initial_placement "$dir")
  why="$(wait_until "$dir" redundant "every tenant redundant")"
  write_env "$dir"
  # The placement daemon: copies a lost member back; balances once `balancer` enables it.
  echo none >"$dir/balancer"
  setsid python3 "$PLACEMENT" daemon "$dir" "$SCRIPTS/hci.sh" </dev/null >>"$dir/placement.log" 2>&1 &
  echo $! >"$dir/placement.pid"
  trap - EXIT
  log "HCI cluster up in $(elapsed "$t0") s: $(cat "$dir/nodes") nodes of $(cat "$dir/cpus") CPUs, $(cat "$dir/tenants") tenants; $why; source $dir/env.sh"
}

# wait_until DIR leaders|redundant WHAT: polls scripts/hci/placement.py until it says so.
wait_until() {
  local dir="$1" i why=""
  for ((i = 0; i < START_TIMEOUT * 2; i++)); do
    if why="$(python3 "$PLACEMENT" "$2" "$dir")"; then
      echo "$why"
      return 0
    fi
    sleep 0.5
  done
  fail_server Patroni "$dir/node1/t1/patroni.log" "not $3 within ${START_TIMEOUT}s ($why)"
}

write_env() {
  local dir="$1" t
  {
    echo "# written by scripts/hci.sh start $dir"
    printf "export STORLAB_HCI_DIR='%s'\n" "$dir"
    printf "export STORLAB_HCI_SCRIPT='%s'\n" "$SCRIPTS/hci.sh"
    for ((t = 1; t <= $(cat "$dir/tenants"); t++)); do
      printf "export STORLAB_HCI_URL_T%s='%s'\n" "$t" "$(tenant_url "$dir" "t$t")"
    done
  } >"$dir/env.sh.tmp"
  mv -f "$dir/env.sh.tmp" "$dir/env.sh"
}

# tenant_url DIR TENANT: libpq's multi-host URL over every node (the first that gives a
# read-write session is used: the primary wherever it is now); timeouts as scripts/cluster.sh.
tenant_url() {
  local dir="$1" hosts=() node
  while read -r node; do hosts+=("$(node_ip "$dir" "$node"):$((5500 + ${2#t}))"); done < <(nodes_of "$dir")
  echo "postgresql://$PG_USER:$(cat "$dir/storlab-password")@$(
    IFS=,
    echo "${hosts[*]}"
  )/$PG_DB?target_session_attrs=read-write&sslmode=disable&connect_timeout=2&tcp_user_timeout=3000&keepalives_idle=2&keepalives_interval=1"
}

cmd_url() {
  local dir
  dir="$(need_cluster "${1:-}")"
  [ -n "${2:-}" ] || usage
  tenant_url "$dir" "$2"
}

# ---------------------------------------------------------------------------------------------
# stop

stop_all() {
  local dir="$1" where="the HCI cluster's namespaces" links=() node n pid
  [ -z "${2:-}" ] || where=""
  rm -f "$dir/env.sh" "$dir/env.sh.tmp"
  pid="$(pidfile_pid "$dir/placement.pid")"
  if alive "$pid"; then term_wait placement "$pid" || true; fi
  pcmk_down "$dir" || return 1
  n="$(cat "$dir/nodes" 2>/dev/null || echo 9)"
  for ((i = 1; i <= n; i++)); do links+=("$(ns_of "$dir" "node$i")" "$(veth_of "$dir" "node$i")"); done
  links+=("$(ns_of "$dir" dcs)" "$(veth_of "$dir" dcs)")
  netns_teardown hci "$where" "$(bridge_of "$dir")" "${links[@]}" || return 1
  local rc=0 g
  for ((i = 1; i <= n; i++)); do
    node="node$i"
    g="$(group_of "$dir" "$node")"
    cg_kill "$g" 5 >/dev/null 2>&1 || true
    node_disk_away "$dir" "$node" || rc=1
    for t in "$dir/$node"/t*; do [ ! -d "$t" ] || cg_remove "$g/${t##*/}" 2>/dev/null || true; done
    cg_remove "$g" 2>/dev/null || true
  done
  cg_remove "storlab-hci-$(dir_hash "$dir")" 2>/dev/null || true
  return "$rc"
}

cmd_stop() { stop_under "${1:-}" "some of the cluster" "no process, namespace, link, cgroup, disk or bridge"; }

# ---------------------------------------------------------------------------------------------
# status, redundant, power-off, balancer, watch

need_cluster() { started_under "${1:-}" "HCI cluster"; }

cmd_status() {
  local dir
  dir="$(need_cluster "${1:-}")"
  python3 "$PLACEMENT" status "$dir"
}

cmd_redundant() {
  local dir
  dir="$(need_cluster "${1:-}")"
  python3 "$PLACEMENT" redundant "$dir"
}

# A node lost with its data: the link down first (nothing its dying processes send gets out),
# every process of its group killed at once, then its disk detached and deleted.
cmd_power_off() {
  local dir node="${2:-}" ns t0 g
  dir="$(need_cluster "${1:-}")"
  [ -n "$node" ] || usage
  [ -d "$dir/$node/disk" ] || die "no node '$node' in the cluster (nodes: $(nodes_of "$dir" | xargs))"
  [ ! -e "$dir/$node/off" ] || die "$node is already powered off"
  ns="$(ns_of "$dir" "$node")"
  g="$(group_of "$dir" "$node")"
  python3 "$PLACEMENT" hosted "$dir" "$node" || true
  t0="$(now)"
  date +%s.%N >"$dir/$node/off"
  veth_set down "$ns" "$(veth_of "$dir" "$node")" eth0
  local before
  before="$(cg_pids "$g" | wc -l)"
  cg_kill "$g" 5 || die "$node: processes survive cgroup.kill in $g"
  ns_sigkill "$ns" 5 || die "$node: $NS_LEFT processes survive SIGKILL in $ns"
  node_disk_away "$dir" "$node"
  log "$node powered off: link down, $before processes of its group killed at once ($NS_KILLED more found in its namespace), disk gone, in $(elapsed "$t0") s"
}

cmd_balancer() {
  local dir policy="$SCRIPTS/hci/balance-policy" after=0 mode="${2:-}" i=0
  dir="$(need_cluster "${1:-}")"
  shift 2 || usage
  while [ $# -gt 0 ]; do
    [ $# -ge 2 ] || die "balancer: option $1 needs a value"
    case "$1" in
    --after) after="$2" ;;
    --policy) policy="$(realpath -e "$2")" || die "balancer: no policy file $2" ;;
    *) die "balancer: unknown option $1" ;;
    esac
    shift 2
  done
  case "$mode" in
  none)
    echo none >"$dir/balancer.tmp"
    mv -f "$dir/balancer.tmp" "$dir/balancer"
    # A move under way ends first (the daemon never leaves one half done).
    while [ -e "$dir/placement.moving" ] && [ "$i" -lt 1200 ] && alive "$(pidfile_pid "$dir/placement.pid")"; do
      [ "$i" -gt 0 ] || log "balancer: waiting for the move under way ($(cat "$dir/placement.moving" 2>/dev/null)) to end"
      sleep 0.5
      i=$((i + 1))
    done
    [ ! -e "$dir/placement.moving" ] || die "balancer: the move $(cat "$dir/placement.moving") still runs after 10 minutes"
    pcmk_down "$dir" || die "balancer: Pacemaker's processes survive cgroup.kill"
    ;;
  script)
    [ -x "$policy" ] || die "balancer: policy $policy is not an executable file"
    pcmk_down "$dir" || die "balancer: Pacemaker's processes survive cgroup.kill"
    awk -v a="$after" -v p="$policy" 'BEGIN { printf "script %.3f %s\n", systime() + a, p }' >"$dir/balancer.tmp"
    mv -f "$dir/balancer.tmp" "$dir/balancer"
    ;;
  pacemaker)
    pcmk_up "$dir"
    awk -v a="$after" 'BEGIN { printf "pacemaker %.3f\n", systime() + a }' >"$dir/balancer.tmp"
    mv -f "$dir/balancer.tmp" "$dir/balancer"
    ;;
  *) die "balancer: none, script or pacemaker (got '$mode')" ;;
  esac
  log "balancer: $(cat "$dir/balancer")"
}

# cmd_move DIR TENANT NODE: the tenant's primary to NODE, by the placement daemon's move (a
# request in DIR/requests); returns once it is there (dies with the daemon's reason if not).
cmd_move() {
  local dir="$1" t="$2" node="$3" req t0
  if [ ! -d "$dir/$node/disk" ] || [ -e "$dir/$node/off" ]; then die "move: $node is not a live node"; fi
  [ "$(python3 "$PLACEMENT" leader "$dir" "$t")" != "$node" ] || return 0
  t0="$(now)"
  req="$dir/requests/$t"
  mkdir -p "$dir/requests"
  rm -f "$req.failed"
  echo "$node" >"$req.tmp"
  mv -f "$req.tmp" "$req"
  while [ "$(python3 "$PLACEMENT" leader "$dir" "$t")" != "$node" ]; do
    if [ -e "$req.failed" ]; then
      local why
      why="$(cat "$req.failed")"
      rm -f "$req" "$req.failed"
      die "move $t to $node: $why"
    fi
    alive "$(pidfile_pid "$dir/placement.pid")" || die "move: the placement daemon does not run"
    awk -v a="$t0" -v b="$(now)" 'BEGIN { exit !(b - a > 900) }' && die "move $t to $node: not done within 15 minutes"
    sleep 0.5
  done
  rm -f "$req"
  log "moved $t's primary to $node in $(elapsed "$t0") s"
}

# cmd_place DIR initial: every tenant's primary back on its node of the initial placement (for
# a balancing run that starts from the same placement as the unbalanced one).
cmd_place() {
  local dir="$1" t p r
  [ "${2:-}" = initial ] || die "place: only 'initial' is known (got '${2:-}')"
  while read -r t p r; do cmd_move "$dir" "$t" "$p"; done < <(initial_placement "$dir")
}

# watch DIR [--every S]: for a `sample` event. Every S seconds, per live node: its CPU use
# (CPUs: the group's CPU time over the period) and its disk's read and write rates (bytes/s, as
# the group's blkio counts them); and each span the daemon appends to DIR/spans.log from now on.
cmd_watch() {
  local dir every=1 node
  dir="$(need_cluster "${1:-}")"
  [ "${2:-}" != --every ] || every="${3:-1}"
  touch "$dir/spans.log"
  tail -n0 -F "$dir/spans.log" 2>/dev/null &
  local tailpid=$!
  trap 'kill "$tailpid" 2>/dev/null; exit 0' TERM INT
  local -A last
  local t0 t1 usage
  t0="$(now)"
  while read -r node; do last[$node]="$(cg_usage "$(group_of "$dir" "$node")")"; done < <(nodes_of "$dir")
  while sleep "$every"; do
    t1="$(now)"
    while read -r node; do
      [ ! -e "$dir/$node/off" ] || continue
      usage="$(cg_usage "$(group_of "$dir" "$node")")"
      awk -v n="$node" -v a="${last[$node]}" -v b="$usage" -v dt="$(awk -v x="$t0" -v y="$t1" 'BEGIN { print y - x }')" 'BEGIN {
        split(a, pa, /[ =]/); split(b, pb, /[ =]/)
        printf "sample %s.cpu %.3f cpus\n", n, (pb[2] - pa[2]) / 1e6 / dt
        printf "sample %s.disk-read %.0f bytes/s\n", n, (pb[4] - pa[4]) / dt
        printf "sample %s.disk-write %.0f bytes/s\n", n, (pb[6] - pa[6]) / dt
      }'
      last[$node]="$usage"
    done < <(nodes_of "$dir")
    t0="$t1"
  done
}

case "${1:-}" in
install) cmd_install ;;
start)
  shift
  cmd_start "$@"
  ;;
stop) cmd_stop "${2:-}" ;;
status) cmd_status "${2:-}" ;;
redundant) cmd_redundant "${2:-}" ;;
power-off) cmd_power_off "${2:-}" "${3:-}" ;;
balancer)
  shift
  cmd_balancer "$@"
  ;;
watch)
  shift
  cmd_watch "$@"
  ;;
url) cmd_url "${2:-}" "${3:-}" ;;
move) cmd_move "$(need_cluster "${2:-}")" "${3:?TENANT}" "${4:?NODE}" ;;
place) cmd_place "$(need_cluster "${2:-}")" "${3:-}" ;;
pcmk)
  shift
  cmd_pcmk "$(need_cluster "${1:-}")" "${@:2}"
  ;;
add-member) cmd_add_member "$(need_cluster "${2:-}")" "${3:?}" "${4:?}" ;;
remove-member) cmd_remove_member "$(need_cluster "${2:-}")" "${3:?}" "${4:?}" ;;
*) usage ;;
esac
