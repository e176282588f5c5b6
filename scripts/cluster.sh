#!/usr/bin/env bash
# Installs, starts and stops the replicated database cluster that storlab's node-loss tests
# use: PostgreSQL 15 under Patroni 3.0 with etcd 3.4 (Debian packages), three nodes with
# synchronous replication, each node in its own network namespace on a bridge.
#
#   scripts/cluster.sh install          install what is missing (idempotent; needs root)
#   scripts/cluster.sh start DIR        start the three nodes with fresh data under DIR, wait
#                                       for a leader and a synchronous standby, write DIR/env.sh
#   scripts/cluster.sh stop DIR         stop everything started under DIR (also half-started):
#                                       processes, namespaces, links, the bridge
#   scripts/cluster.sh status DIR       each node's role and state (exit 1 unless redundant)
#   scripts/cluster.sh power-off DIR NODE   node1|node2|node3|leader: its link down, then SIGKILL
#                                       of every process in its namespace (a power loss)
#   scripts/cluster.sh leader DIR       print the leader's node name (exit 1 if none)
#   scripts/cluster.sh leader-netns DIR print the leader's network namespace (a power-off
#                                       event's `netns-command`)
#   scripts/cluster.sh redundant DIR    exit 0 only when a leader has a synchronous standby
#                                       streaming (a `wait-for` command)
#
# Layout: a bridge slcHHHHHH (HHHHHH: from DIR) with the host at 10.214.X.1/24 (X: the first
# 10.214.X.0/24 no interface uses, on the host or in a network namespace: scripts/netns-lib.sh);
# etcd in namespace slc-HHHHHH-dcs at 10.214.X.10; node N (N = 1..3) in namespace slc-HHHHHH-nodeN
# at 10.214.X.1N: Patroni (REST API :8008) and PostgreSQL (:5432). One etcd in a namespace of its
# own, not a member per node: the DCS is not what is under test; with a member per node, powering
# off the node whose member leads etcd would add an etcd election to the outage, so the outage
# would depend on which member led.
# Timings: scripts/patroni-lib.sh.
# Every data, config, log and pid file is under DIR; PostgreSQL and Patroni run as `postgres`.
# Nothing else on the host is touched: no other interface, no forwarding, no firewall rule.
set -euo pipefail
SCRIPTS="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=scripts/tools-lib.sh
. "$SCRIPTS/tools-lib.sh"
# shellcheck source=scripts/netns-lib.sh
. "$SCRIPTS/netns-lib.sh"
# shellcheck source=scripts/patroni-lib.sh
. "$SCRIPTS/patroni-lib.sh"

PG_BIN="${STORLAB_PG_BIN:-/usr/lib/postgresql/15/bin}"
NODES=(node1 node2 node3)
PG_USER=storlab
PG_DB=ycsb
START_TIMEOUT="${STORLAB_CLUSTER_START_TIMEOUT:-120}" # seconds until leader + sync standby
STOP_TIMEOUT=10

usage() {
  sed -n '6,17p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

cmd_install() {
  apt_install patroni etcd-server etcd-client python3-etcd postgresql-15 postgresql-client-15 iproute2 util-linux python3
}

# ---------------------------------------------------------------------------------------------
# names (interface names: at most 15 characters)

bridge_of() { echo "slc$(dir_hash "$1")"; }
ns_of() { echo "slc-$(dir_hash "$1")-$2"; }         # DIR NODE|dcs
veth_of() { echo "slc$(dir_hash "$1")-${2: -1}"; } # DIR NODE|dcs: host end, e.g. slcab12cd-1
node_ip() {                                         # DIR NODE|dcs
  local x
  x="$(cat "$1/subnet")"
  case "$2" in dcs) echo "10.214.$x.10" ;; node*) echo "10.214.$x.1${2#node}" ;; esac
}

# make_ns DIR NODE|dcs: the namespace, its veth pair (host end on the bridge, namespace end
# named eth0) and its address.
make_ns() {
  local dir="$1" who="$2" ns
  ns="$(ns_of "$dir" "$who")"
  ip netns add "$ns"
  veth_to_bridge "$ns" "$(veth_of "$dir" "$who")" "$(bridge_of "$dir")" eth0 "$(node_ip "$dir" "$who")/24"
}

# ---------------------------------------------------------------------------------------------
# Patroni's REST API, read with python3 (JSON)

# cluster_py DIR MODE: MODE leader (print the leader's name), redundant (exit 0 when the leader
# reports a synchronous standby streaming; prints why not), status (a line per node).
cluster_py() {
  local dir="$1" mode="$2" urls=() n
  for n in "${NODES[@]}"; do urls+=("$n=http://$(node_ip "$dir" "$n"):8008"); done
  python3 - "$mode" "${urls[@]}" <<'EOF'
import json, sys, urllib.request
from concurrent.futures import ThreadPoolExecutor
mode, nodes = sys.argv[1], dict(a.split("=", 1) for a in sys.argv[2:])

def get(url):
    try:
        with urllib.request.urlopen(url, timeout=1.0) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:  # Patroni answers 503 on /  for a replica: still JSON
        try:
            return json.load(e)
        except Exception:
            return None
    except Exception:
        return None

with ThreadPoolExecutor(len(nodes)) as ex:
    views = dict(zip(nodes, ex.map(lambda u: get(u + "/cluster"), nodes.values())))
    selves = dict(zip(nodes, ex.map(lambda u: get(u + "/patroni"), nodes.values())))
# The cluster as the answering members see it: the view of the member that is leader itself.
members, leader = [], None
for name, v in views.items():
    if not v:
        continue
    for m in v.get("members", []):
        if m.get("role") == "leader" and m.get("name") == name:
            members, leader = v["members"], name
if not members:
    members = next((v["members"] for v in views.values() if v and v.get("members")), [])

if mode == "status":
    roles = {m["name"]: m for m in members}
    for name in nodes:
        m, s = roles.get(name), selves.get(name)
        if s is None:
            print(f"{name}  no answer (REST API {nodes[name]})")
        else:
            print(f"{name}  {(m or {}).get('role', s.get('role', '?'))}  {s.get('state', '?')}  "
                  f"timeline {s.get('timeline', '-')}  postgres pid {s.get('pid', '-')}")
    sys.exit(0)

if leader is None:
    print("no leader")
    sys.exit(1)
if mode == "leader":
    print(leader)
    sys.exit(0)
# redundant: the leader runs and its own replication view (pg_stat_replication) has a sync
# standby streaming that the cluster lists as sync_standby.
top = get(nodes[leader] + "/")
if not top or top.get("state") != "running" or top.get("role") not in ("master", "primary"):
    print(f"leader {leader} is not a running primary")
    sys.exit(1)
sync = {m["name"] for m in members if m.get("role") == "sync_standby"}
streaming = [r.get("application_name") for r in top.get("replication", [])
             if r.get("state") == "streaming" and r.get("sync_state") == "sync"]
both = sorted(sync.intersection(streaming))
if not both:
    print(f"leader {leader}: no synchronous standby streaming (sync_standby: {sorted(sync) or 'none'}, "
          f"streaming sync: {streaming or 'none'})")
    sys.exit(1)
print(f"redundant: leader {leader}, synchronous standby {', '.join(both)}")
EOF
}

# ---------------------------------------------------------------------------------------------
# start

start_etcd() { etcd_start "$1/dcs" "$(ns_of "$1" dcs)" "$(node_ip "$1" dcs)"; }

write_patroni_conf() {
  local dir="$1" node="$2" root="$1/$2"
  patroni_conf "$root/patroni.yml" "note=scripts/cluster.sh: node $node in namespace $(ns_of "$dir" "$node")" \
    "scope=storlab-$(dir_hash "$dir")" "name=$node" "ip=$(node_ip "$dir" "$node")" rest=8008 pg=5432 \
    "data=$root/data" "run=$root/run" "pglog=$root/pglog" "dcs=$(node_ip "$dir" dcs)" \
    "subnet=$(cat "$dir/subnet")" "secrets=$dir" "post=$dir/post-bootstrap.sh"
}

start_node() {
  local dir="$1" node="$2" root="$1/$2" ns
  ns="$(ns_of "$dir" "$node")"
  mkdir -p "$root/run" "$root/pglog"
  echo "$ns" >"$root/netns"
  write_patroni_conf "$dir" "$node"
  chown -R postgres:postgres "$root"
  chmod 700 "$root/run"
  ns_spawn "$ns" "$root/patroni.pid" "$root/patroni.log" postgres patroni "$root/patroni.yml"
}

cmd_start() {
  local dir t
  is_root || die "creating network namespaces and a bridge needs root"
  [ -x "$PG_BIN/initdb" ] || die "PostgreSQL 15 binaries not found in $PG_BIN: run scripts/cluster.sh install"
  command -v patroni >/dev/null && command -v etcd >/dev/null || die "patroni or etcd missing: run scripts/cluster.sh install"
  dir="$(resolve_dir "${1:-}")"
  [ "${#dir}" -le 70 ] || die "DIR '$dir' is too long for PostgreSQL's unix socket path: use a shorter DIR"
  t="$(now)"
  stop_all "$dir" quiet || die "could not stop the cluster left in $dir"
  rm -rf "$dir/dcs" "$dir/node1" "$dir/node2" "$dir/node3" "$dir"/*-password "$dir/post-bootstrap.sh" "$dir/subnet"
  trap 'rc=$?; if [ "$rc" -ne 0 ]; then log "start failed: stopping what was started in '"$dir"'"; stop_all "'"$dir"'" quiet || true; fi' EXIT
  chmod o+x "$dir" # the postgres user traverses DIR (its parents must allow it too)
  runuser -u postgres -- test -x "$dir" ||
    die "the postgres user cannot reach $dir: use a DIR whose parent directories others may traverse (e.g. under /tmp)"
  local x br
  br="$(bridge_of "$dir")"
  x="$(bridge_subnet "$dir" 10.214 "$br")"
  local who
  for who in dcs "${NODES[@]}"; do make_ns "$dir" "$who"; done

  patroni_secrets "$dir" "$PG_USER" "$PG_DB"

  start_etcd "$dir"
  local node
  for node in "${NODES[@]}"; do start_node "$dir" "$node"; done

  local i why=""
  for ((i = 0; i < START_TIMEOUT * 2; i++)); do
    if why="$(cluster_py "$dir" redundant)"; then break; fi
    for node in "${NODES[@]}"; do
      alive "$(pidfile_pid "$dir/$node/patroni.pid")" || fail_server "Patroni $node" "$dir/$node/patroni.log" "exited"
    done
    sleep 0.5
  done
  [ "$i" -lt $((START_TIMEOUT * 2)) ] || fail_server Patroni "$dir/node1/patroni.log" "no leader with a synchronous standby within ${START_TIMEOUT}s ($why)"
  local leader
  leader="$(cluster_py "$dir" leader)"
  local hosts=()
  for node in "${NODES[@]}"; do hosts+=("$(node_ip "$dir" "$node"):5432"); done
  # libpq's multi-host URL: the first host that accepts a read-write session is used.
  # tcp_user_timeout is libpq's (milliseconds): a request a powered-off node never acknowledges
  # fails after 3 s instead of TCP's 15 minutes of retransmissions.
  local url
  url="postgresql://$PG_USER:$(cat "$dir/storlab-password")@$(
    IFS=,
    echo "${hosts[*]}"
  )/$PG_DB?target_session_attrs=read-write&sslmode=disable&connect_timeout=2&tcp_user_timeout=3000&keepalives_idle=2&keepalives_interval=1"
  # Answers as PostgreSQL's own client does: a read-write session on the leader.
  local got
  got="$("$PG_BIN/psql" -X -q -At -d "$url" -c 'SELECT NOT pg_is_in_recovery()' 2>"$dir/psql.err")" && [ "$got" = t ] ||
    fail_server PostgreSQL "$dir/psql.err" "the cluster URL gives no read-write session"
  {
    echo "# written by scripts/cluster.sh start $dir"
    printf "export STORLAB_CLUSTER_DIR='%s'\n" "$dir"
    printf "export STORLAB_CLUSTER_SCRIPT='%s'\n" "$SCRIPTS/cluster.sh"
    printf "export STORLAB_PG_CLUSTER_URL='%s'\n" "$url"
    printf "export STORLAB_PG_CLUSTER_NODES='%s'\n" "${NODES[*]}"
    printf "export STORLAB_PG_CLUSTER_LEADER='%s'\n" "$leader"
    printf "export STORLAB_PG_CLUSTER_DCS_NETNS='%s'\n" "$(ns_of "$dir" dcs)"
    for node in "${NODES[@]}"; do
      local up="${node^^}"
      printf "export STORLAB_PG_CLUSTER_%s_NETNS='%s'\n" "$up" "$(ns_of "$dir" "$node")"
      printf "export STORLAB_PG_CLUSTER_%s_PID_FILES='%s %s'\n" "$up" "$dir/$node/patroni.pid" "$dir/$node/data/postmaster.pid"
    done
  } >"$dir/env.sh.tmp"
  mv -f "$dir/env.sh.tmp" "$dir/env.sh"
  trap - EXIT
  log "PostgreSQL 15 / Patroni cluster up in $(elapsed "$t") s: $why; bridge $br 10.214.$x.0/24; source $dir/env.sh"
}

# ---------------------------------------------------------------------------------------------
# stop

# stop_all DIR [quiet]: every process in DIR's namespaces (SIGTERM, then SIGKILL), the
# namespaces, the veth links and the bridge. Names come from DIR, so a half-started cluster
# (no subnet file yet) is stopped as well.
stop_all() {
  local dir="$1" where="the cluster's namespaces" who links=()
  [ -z "${2:-}" ] || where=""
  rm -f "$dir/env.sh" "$dir/env.sh.tmp"
  for who in "${NODES[@]}" dcs; do links+=("$(ns_of "$dir" "$who")" "$(veth_of "$dir" "$who")"); done
  netns_teardown cluster "$where" "$(bridge_of "$dir")" "${links[@]}"
}

cmd_stop() { stop_under "${1:-}" "some of the cluster" "no process, namespace, link or bridge"; }

# ---------------------------------------------------------------------------------------------
# status, leader, redundant, power-off

need_cluster() { started_under "${1:-}" "cluster"; }

cmd_status() {
  local dir node ns rc=0
  dir="$(need_cluster "${1:-}")"
  for node in "${NODES[@]}"; do
    ns="$(ns_of "$dir" "$node")"
    if ns_exists "$ns"; then
      echo "$node  namespace $ns  $(node_ip "$dir" "$node")  link $(ip -n "$ns" -br link show eth0 2>/dev/null | awk '{print $2}')  processes $(ns_pids "$ns" | wc -l)"
    else
      echo "$node  no namespace"
    fi
  done
  cluster_py "$dir" status
  cluster_py "$dir" redundant || rc=1
  [ -f "$dir/env.sh" ] && echo "environment: . $dir/env.sh"
  return "$rc"
}

cmd_leader() {
  local dir
  dir="$(need_cluster "${1:-}")"
  cluster_py "$dir" leader
}

cmd_leader_netns() {
  local dir leader
  dir="$(need_cluster "${1:-}")"
  leader="$(cluster_py "$dir" leader)" || die "no leader"
  ns_of "$dir" "$leader"
}

cmd_redundant() {
  local dir
  dir="$(need_cluster "${1:-}")"
  cluster_py "$dir" redundant
}

# A power loss: the node's link goes down first (nothing the dying processes' sockets send gets
# out, as with a cut power supply), then every process in its namespace gets SIGKILL.
cmd_power_off() {
  local dir node="${2:-}" ns t
  dir="$(need_cluster "${1:-}")"
  [ -n "$node" ] || usage
  if [ "$node" = leader ]; then node="$(cluster_py "$dir" leader)" || die "no leader to power off"; fi
  [[ " ${NODES[*]} " == *" $node "* ]] || die "no node '$node' in the cluster (nodes: ${NODES[*]})"
  ns="$(ns_of "$dir" "$node")"
  ns_exists "$ns" || die "$node: namespace $ns does not exist"
  t="$(now)"
  veth_set down "$ns" "$(veth_of "$dir" "$node")" eth0
  ns_sigkill "$ns" 5 || die "$node: $NS_LEFT processes survive SIGKILL in $ns"
  log "$node powered off: link down, $NS_KILLED processes killed in $(elapsed "$t") s"
  echo "$node"
}

case "${1:-}" in
install) cmd_install ;;
start) cmd_start "${2:-}" ;;
stop) cmd_stop "${2:-}" ;;
status) cmd_status "${2:-}" ;;
leader) cmd_leader "${2:-}" ;;
leader-netns) cmd_leader_netns "${2:-}" ;;
redundant) cmd_redundant "${2:-}" ;;
power-off) cmd_power_off "${2:-}" "${3:-}" ;;
*) usage ;;
esac
