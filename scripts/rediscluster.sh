#!/usr/bin/env bash
# Installs, starts and stops the Redis Cluster that storlab's node-loss tests use: Debian's
# redis 7.0, three masters and three replicas (`cluster-enabled yes`, cluster-node-timeout
# 2000 ms), each node in its own network namespace on a bridge.
#
#   scripts/rediscluster.sh install          install what is missing (idempotent; needs root)
#   scripts/rediscluster.sh start DIR        start six nodes with fresh data under DIR, create
#                                            the cluster, wait for cluster_state:ok and a
#                                            replica per master, write DIR/env.sh
#   scripts/rediscluster.sh stop DIR         stop everything started under DIR (also half-
#                                            started): processes, namespaces, links, the bridge
#   scripts/rediscluster.sh status DIR       each node's role and state (exit 1 unless redundant)
#   scripts/rediscluster.sh master-netns DIR [NODE]  print the network namespace of NODE
#                                            (node1..node6), which must be a master now; without
#                                            NODE, of the master serving slot 0 (a power-off
#                                            event's `netns-command`)
#   scripts/rediscluster.sh serving DIR      exit 0 when every live node reports cluster_state:ok
#                                            and live masters serve all 16384 slots (a `wait-for`)
#   scripts/rediscluster.sh redundant DIR    `serving`, and every master has a replica connected
#   scripts/rediscluster.sh restart-node DIR NODE  a powered-off node back: its link up, its
#                                            redis-server started on its own data (it rejoins as
#                                            a replica of the master that took over)
#
# Layout: a bridge slrHHHHHH (HHHHHH: from DIR) with the host at 10.215.X.1/24 (X: the first
# 10.215.X.0/24 no interface uses, on the host or in a network namespace: scripts/netns-lib.sh);
# node N (N = 1..6) in namespace slr-HHHHHH-nodeN at 10.215.X.1N, redis-server on port 6379.
# `redis-cli --cluster create` makes node1..node3 masters (the first three addresses) and
# node4..node6 their replicas. The client (storlab, redis-cli) runs on the host and reaches every
# node through the bridge, which is also what the nodes announce to clients in CLUSTER SLOTS and
# MOVED redirections.
# Persistence: appendonly yes with appendfsync everysec (Redis's recommended setting), so a
# restarted node comes back with its data; writes lost when a master dies are lost by the
# asynchronous replication to its replica, which is what the lost-writes check counts.
# Every data, config, log and pid file is under DIR; the servers run as root in their
# namespaces. Nothing else on the host is touched: no other interface, no forwarding, no
# firewall rule.
set -euo pipefail
SCRIPTS="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=scripts/tools-lib.sh
. "$SCRIPTS/tools-lib.sh"
# shellcheck source=scripts/netns-lib.sh
. "$SCRIPTS/netns-lib.sh"

NODES=(node1 node2 node3 node4 node5 node6)
PORT=6379
NODE_TIMEOUT_MS=2000
START_TIMEOUT="${STORLAB_REDIS_CLUSTER_START_TIMEOUT:-60}" # seconds until ok and replicated

usage() {
  sed -n '6,22p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

cmd_install() {
  apt_install redis-server redis-tools iproute2 util-linux
}

# ---------------------------------------------------------------------------------------------
# names (interface names: at most 15 characters)

bridge_of() { echo "slr$(dir_hash "$1")"; }
ns_of() { echo "slr-$(dir_hash "$1")-$2"; }        # DIR NODE
veth_of() { echo "slr$(dir_hash "$1")-${2: -1}"; } # DIR NODE: host end, e.g. slrab12cd-1
node_ip() { echo "10.215.$(cat "$1/subnet").1${2#node}"; }
is_node() { [[ " ${NODES[*]} " == *" $1 "* ]]; }

# make_ns DIR NODE: the namespace, its veth pair (host end on the bridge, namespace end named
# eth0) and its address.
make_ns() {
  local dir="$1" node="$2" ns
  ns="$(ns_of "$dir" "$node")"
  ip netns add "$ns"
  veth_to_bridge "$ns" "$(veth_of "$dir" "$node")" "$(bridge_of "$dir")" eth0 "$(node_ip "$dir" "$node")/24"
}

# redis-cli against NODE with a bound time (a powered-off node never answers).
rcli() {
  local dir="$1" node="$2"
  shift 2
  timeout 2 redis-cli -h "$(node_ip "$dir" "$node")" -p "$PORT" "$@" 2>/dev/null
}

# Nodes whose namespace has processes (a powered-off node has none).
live_nodes() {
  local dir="$1" n
  for n in "${NODES[@]}"; do
    [ -z "$(ns_pids "$(ns_of "$dir" "$n")")" ] || echo "$n"
  done
  return 0
}

# ---------------------------------------------------------------------------------------------
# start

write_conf() {
  local dir="$1" node="$2" root="$1/$2"
  cat >"$root/redis.conf" <<EOF
# storlab scripts/rediscluster.sh: $node in namespace $(ns_of "$dir" "$node")
bind $(node_ip "$dir" "$node") 127.0.0.1
port $PORT
protected-mode no
daemonize no
pidfile $root/redis.pid
logfile $root/redis.log
dir $root
cluster-enabled yes
cluster-config-file $root/nodes.conf
cluster-node-timeout $NODE_TIMEOUT_MS
appendonly yes
appendfsync everysec
save ""
EOF
}

start_node() {
  local dir="$1" node="$2" root="$1/$2"
  ns_spawn "$(ns_of "$dir" "$node")" "$root/server.pid" "$root/stdout.log" root redis-server "$root/redis.conf"
}

wait_answers() {
  local dir="$1" node="$2" i
  for ((i = 0; i < 100; i++)); do
    [ "$(rcli "$dir" "$node" ping)" = PONG ] && return 0
    alive "$(pidfile_pid "$dir/$node/server.pid")" || fail_server "redis $node" "$dir/$node/redis.log" "exited"
    sleep 0.1
  done
  fail_server "redis $node" "$dir/$node/redis.log" "did not answer PING within 10 s"
}

cmd_start() {
  local dir t
  is_root || die "creating network namespaces and a bridge needs root"
  command -v redis-server >/dev/null && command -v redis-cli >/dev/null || die "redis-server or redis-cli missing: run scripts/rediscluster.sh install"
  dir="$(resolve_dir "${1:-}")"
  t="$(now)"
  stop_all "$dir" quiet || die "could not stop the cluster left in $dir"
  rm -rf "$dir/subnet" "$dir"/node?
  trap 'rc=$?; if [ "$rc" -ne 0 ]; then log "start failed: stopping what was started in '"$dir"'"; stop_all "'"$dir"'" quiet || true; fi' EXIT
  local x br node
  br="$(bridge_of "$dir")"
  x="$(bridge_subnet "$dir" 10.215 "$br")"
  for node in "${NODES[@]}"; do
    make_ns "$dir" "$node"
    mkdir -p "$dir/$node"
    write_conf "$dir" "$node"
    start_node "$dir" "$node"
  done
  local addrs=()
  for node in "${NODES[@]}"; do
    wait_answers "$dir" "$node"
    addrs+=("$(node_ip "$dir" "$node"):$PORT")
  done
  redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes >"$dir/create.log" 2>&1 ||
    fail_server "redis-cli --cluster create" "$dir/create.log" "failed"
  local i why=""
  for ((i = 0; i < START_TIMEOUT * 4; i++)); do
    if why="$(check "$dir" redundant)"; then break; fi
    sleep 0.25
  done
  [ "$i" -lt $((START_TIMEOUT * 4)) ] || fail_server "Redis Cluster" "$dir/create.log" "not ok with a replica per master within ${START_TIMEOUT}s ($why)"
  local urls=()
  for node in "${NODES[@]}"; do urls+=("$(node_ip "$dir" "$node"):$PORT"); done
  {
    echo "# written by scripts/rediscluster.sh start $dir"
    printf "export STORLAB_REDIS_CLUSTER_DIR='%s'\n" "$dir"
    printf "export STORLAB_REDIS_CLUSTER_SCRIPT='%s'\n" "$SCRIPTS/rediscluster.sh"
    printf "export STORLAB_REDIS_CLUSTER_URLS='%s'\n" "$(
      IFS=,
      echo "${urls[*]}"
    )"
    printf "export STORLAB_REDIS_CLUSTER_NODES='%s'\n" "${NODES[*]}"
    for node in "${NODES[@]}"; do
      local up="${node^^}"
      printf "export STORLAB_REDIS_CLUSTER_%s_NETNS='%s'\n" "$up" "$(ns_of "$dir" "$node")"
      printf "export STORLAB_REDIS_CLUSTER_%s_PID_FILE='%s'\n" "$up" "$dir/$node/server.pid"
    done
  } >"$dir/env.sh.tmp"
  mv -f "$dir/env.sh.tmp" "$dir/env.sh"
  trap - EXIT
  log "Redis Cluster up in $(elapsed "$t") s: $why; bridge $br 10.215.$x.0/24; source $dir/env.sh"
}

# ---------------------------------------------------------------------------------------------
# state: `check DIR serving|redundant` prints why not (exit 1) or what it found (exit 0)

check() {
  local dir="$1" mode="$2" live=() n
  mapfile -t live < <(live_nodes "$dir")
  [ "${#live[@]}" -gt 0 ] || {
    echo "no live node"
    return 1
  }
  for n in "${live[@]}"; do
    [[ "$(rcli "$dir" "$n" cluster info)" == *cluster_state:ok* ]] || {
      echo "$n: cluster_state not ok"
      return 1
    }
  done
  local ips=() view
  for n in "${live[@]}"; do ips+=("$(node_ip "$dir" "$n"):$PORT"); done
  view="$(rcli "$dir" "${live[0]}" cluster nodes)" || {
    echo "${live[0]}: no CLUSTER NODES answer"
    return 1
  }
  # Fields: id addr@cport flags master-id ping pong epoch link slot...
  printf '%s\n' "$view" | awk -v mode="$mode" -v live="${ips[*]}" '
    BEGIN { n = split(live, l, " "); for (i = 1; i <= n; i++) up[l[i]] = 1 }
    { split($2, a, "@"); addr = a[1] }
    $3 ~ /master/ && $3 !~ /fail/ && up[addr] {
      for (i = 9; i <= NF; i++) {
        if ($i ~ /^\[/) continue
        k = split($i, r, "-"); slots += (k == 2 ? r[2] - r[1] + 1 : 1)
      }
      if (NF >= 9) { masters[$1] = addr }
    }
    $3 ~ /slave/ && $3 !~ /fail/ && $8 == "connected" && up[addr] { replicas[$4]++ }
    END {
      if (slots != 16384) { printf "live masters serve %d of 16384 slots\n", slots; exit 1 }
      m = 0; for (id in masters) m++
      if (mode == "redundant") for (id in masters) if (!replicas[id]) {
        printf "master %s has no replica connected\n", masters[id]; exit 1 }
      printf "cluster_state:ok on %d live nodes, %d masters serve 16384 slots", n, m
      if (mode == "redundant") printf ", each with a replica"
      printf "\n"
    }'
}

cmd_serving() { check "$(need_cluster "${1:-}")" serving; }
cmd_redundant() { check "$(need_cluster "${1:-}")" redundant; }

need_cluster() { started_under "${1:-}" "cluster"; }

cmd_status() {
  local dir node ns rc=0
  dir="$(need_cluster "${1:-}")"
  for node in "${NODES[@]}"; do
    ns="$(ns_of "$dir" "$node")"
    if ns_exists "$ns"; then
      echo "$node  $ns  $(node_ip "$dir" "$node")  processes $(ns_pids "$ns" | wc -l)  role $(rcli "$dir" "$node" role | head -n1 || echo '-')"
    else
      echo "$node  no namespace"
    fi
  done
  check "$dir" redundant || rc=1
  [ -f "$dir/env.sh" ] && echo "environment: . $dir/env.sh"
  return "$rc"
}

# master-netns DIR [NODE]
cmd_master_netns() {
  local dir node="${2:-}" n
  dir="$(need_cluster "${1:-}")"
  if [ -n "$node" ]; then
    is_node "$node" || die "no node '$node' in the cluster (nodes: ${NODES[*]})"
    [ "$(rcli "$dir" "$node" role | head -n1)" = master ] || die "$node is not a master now"
  else
    for n in $(live_nodes "$dir"); do
      # CLUSTER NODES: the master (not failed) whose first slot range starts at 0.
      node="$(rcli "$dir" "$n" cluster nodes | awk '$3 ~ /master/ && $3 !~ /fail/ && ($9 == "0" || $9 ~ /^0-/) { split($2, a, "@"); split(a[1], b, ":"); print b[1]; exit }')" || true
      [ -n "$node" ] && break
    done
    [ -n "$node" ] || die "no live node names the master of slot 0"
    node="node${node##*.1}"
    is_node "$node" || die "the master of slot 0 is not one of this cluster's nodes"
  fi
  ns_of "$dir" "$node"
}

cmd_restart_node() {
  local dir node="${2:-}" ns
  dir="$(need_cluster "${1:-}")"
  is_node "$node" || die "no node '$node' in the cluster (nodes: ${NODES[*]})"
  ns="$(ns_of "$dir" "$node")"
  ns_exists "$ns" || die "$node: namespace $ns does not exist"
  [ -z "$(ns_pids "$ns")" ] || die "$node is running: power it off first"
  veth_set up "$ns" "$(veth_of "$dir" "$node")" eth0
  start_node "$dir" "$node"
  wait_answers "$dir" "$node"
  log "$node restarted on its own data"
}

# ---------------------------------------------------------------------------------------------
# stop

# stop_all DIR [quiet]: every process in DIR's namespaces (SIGTERM, then SIGKILL), the
# namespaces, the veth links and the bridge, also of a half-started cluster.
stop_all() {
  local dir="$1" where="the cluster's namespaces" node links=()
  [ -z "${2:-}" ] || where=""
  rm -f "$dir/env.sh" "$dir/env.sh.tmp"
  for node in "${NODES[@]}"; do links+=("$(ns_of "$dir" "$node")" "$(veth_of "$dir" "$node")"); done
  netns_teardown "redis cluster" "$where" "$(bridge_of "$dir")" "${links[@]}"
}

cmd_stop() { stop_under "${1:-}" "some of the cluster" "no process, namespace, link or bridge"; }

case "${1:-}" in
install) cmd_install ;;
start) cmd_start "${2:-}" ;;
stop) cmd_stop "${2:-}" ;;
status) cmd_status "${2:-}" ;;
master-netns) cmd_master_netns "${2:-}" "${3:-}" ;;
serving) cmd_serving "${2:-}" ;;
redundant) cmd_redundant "${2:-}" ;;
restart-node) cmd_restart_node "${2:-}" "${3:-}" ;;
*) usage ;;
esac
