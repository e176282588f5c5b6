# shellcheck shell=bash
# Network-namespace plumbing shared by scripts/cluster.sh, scripts/rediscluster.sh and
# scripts/fileservers.sh (sourced after scripts/tools-lib.sh, whose die, log and term_wait it
# uses). Every name and address is the caller's; this file only creates, finds and removes.
#
# Listings (`ip netns list`, `ip addr`) are read whole into a variable and matched there: under
# `set -o pipefail`, `ip ... | grep -q X` fails when grep stops at the first match and ip gets
# SIGPIPE, which once made a namespace that existed look absent.

# dir_hash DIR [N]: the first N (6) hex digits of DIR's md5, for names unique per DIR
# (interface names: at most 15 characters).
dir_hash() { printf '%s' "$1" | md5sum | cut -c1-"${2:-6}"; }

# ns_exists NS: namespace NS exists (`ip netns list` prints `NAME` or `NAME (id: N)`).
ns_exists() {
  local list name _
  list="$(ip netns list 2>/dev/null)" || return 1
  while read -r name _; do
    [ "$name" = "$1" ] && return 0
  done <<<"$list"
  return 1
}

link_exists() { ip link show "$1" >/dev/null 2>&1; }

# ns_pids NS...: the pids of every process in those of the namespaces that exist.
ns_pids() {
  local ns
  for ns in "$@"; do
    if ns_exists "$ns"; then ip netns pids "$ns" 2>/dev/null || true; fi
  done
}

# ---------------------------------------------------------------------------------------------
# subnets

# netns_lock / netns_unlock: held from choosing a subnet until its first address is on a link,
# so that two scripts starting at once (two clusters, a cluster and the file servers) never
# take the same subnet. Unlock before starting any server: a child that inherits the lock's
# file descriptor holds the lock as long as it runs.
NETNS_LOCK="${STORLAB_NETNS_LOCK:-/run/lock/storlab-netns.lock}"
netns_lock() {
  [ -d "$(dirname "$NETNS_LOCK")" ] || NETNS_LOCK=/tmp/storlab-netns.lock
  exec 8>>"$NETNS_LOCK"
  flock -w 60 8 || die "another script held $NETNS_LOCK for 60 s"
}
netns_unlock() { exec 8>&-; }

# all_addrs: the IPv4 addresses (`ip -o` lines) of every link on the host and in every named
# network namespace.
all_addrs() {
  local list ns _
  ip -4 -o addr show 2>/dev/null || true
  list="$(ip netns list 2>/dev/null)" || return 0
  while read -r ns _; do
    [ -n "$ns" ] || continue
    ip -n "$ns" -4 -o addr show 2>/dev/null || true
  done <<<"$list"
}

# free_octet PREFIX MESSAGE: the first X in 0..249 such that no link on the host or in any
# network namespace has an address in PREFIX.X.0/24 (PREFIX: two octets, e.g. 10.214); dies
# with MESSAGE when there is none. Call it between netns_lock and netns_unlock.
free_octet() {
  local addrs x
  addrs="$(all_addrs)"
  for ((x = 0; x < 250; x++)); do
    [[ "$addrs" == *" $1.$x."* ]] || {
      echo "$x"
      return
    }
  done
  die "$2"
}

# bridge_subnet DIR PREFIX BRIDGE: a free PREFIX.X.0/24 (written to DIR/subnet) and BRIDGE on
# the host at PREFIX.X.1/24; prints X. Under netns_lock: two scripts never take the same.
bridge_subnet() {
  local x
  netns_lock
  x="$(free_octet "$2" "no free $2.X.0/24 for the bridge $3")"
  echo "$x" >"$1/subnet"
  bridge_add "$3" "$2.$x.1/24"
  netns_unlock
  echo "$x"
}

# host_has_addr ADDR: a link on the host has address ADDR (any prefix length).
host_has_addr() {
  local addrs
  addrs="$(ip -4 -o addr show 2>/dev/null)" || return 1
  [[ "$addrs" == *" $1/"* ]]
}

# ---------------------------------------------------------------------------------------------
# links

# bridge_add BRIDGE ADDR/LEN: a bridge on the host with the host's address on it, up.
bridge_add() {
  ip link add "$1" type bridge
  ip addr add "$2" dev "$1"
  ip link set "$1" up
}

# veth_to_bridge NS VETH BRIDGE IFNAME ADDR/LEN: a veth pair from the host (VETH, on BRIDGE,
# up) into namespace NS (named IFNAME there, at ADDR/LEN, up), and NS's loopback up.
veth_to_bridge() {
  local ns="$1" veth="$2" br="$3" ifname="$4" addr="$5"
  ip link add "$veth" type veth peer name "$ifname" netns "$ns"
  ip link set "$veth" master "$br" up
  ip -n "$ns" addr add "$addr" dev "$ifname"
  ip -n "$ns" link set "$ifname" up
  ip -n "$ns" link set lo up
}

# veth_to_host NS VETH PEER HOST_ADDR/LEN NS_ADDR/LEN: a point-to-point veth pair, VETH on the
# host at HOST_ADDR, PEER in namespace NS at NS_ADDR, both up, and NS's loopback up.
veth_to_host() {
  local ns="$1" veth="$2" peer="$3" host_addr="$4" ns_addr="$5"
  ip link add "$veth" type veth peer name "$peer"
  ip link set "$peer" netns "$ns"
  ip addr add "$host_addr" dev "$veth"
  ip link set "$veth" up
  ip -n "$ns" addr add "$ns_addr" dev "$peer"
  ip -n "$ns" link set "$peer" up
  ip -n "$ns" link set lo up
}

# veth_set up|down NS VETH IFNAME: both ends of a namespace's veth link. Down: the host end
# first (nothing sent from inside gets out), then IFNAME in NS; up: NS's loopback, IFNAME, then
# the host end.
veth_set() {
  local state="$1" ns="$2" veth="$3" ifname="$4"
  if [ "$state" = down ]; then
    ip link set "$veth" down
    ip -n "$ns" link set "$ifname" down
  else
    ip -n "$ns" link set lo up
    ip -n "$ns" link set "$ifname" up
    ip link set "$veth" up
  fi
}

# ---------------------------------------------------------------------------------------------
# processes

# ns_spawn NS PIDFILE LOG USER CMD...: CMD in namespace NS, in its own session, in the
# background, as USER (root: as is), output appended to LOG; PIDFILE holds CMD's pid from the
# start (the shell writes its pid, then execs).
ns_spawn() {
  local ns="$1" pidfile="$2" logfile="$3" user="$4"
  shift 4
  local as=()
  [ "$user" = root ] || as=(setpriv --reuid="$user" --regid="$user" --init-groups)
  # shellcheck disable=SC2016 # $$ and "$@" are the inner shell's
  ip netns exec "$ns" setsid sh -c 'echo $$ > "$0"; exec "$@"' "$pidfile" "${as[@]}" "$@" \
    </dev/null >>"$logfile" 2>&1 &
}

# ns_sigkill NS [WAIT]: SIGKILL to every process in NS (a power loss) and, with WAIT (seconds),
# waits until none is left. Sets NS_KILLED (processes signalled) and NS_LEFT (still there);
# returns 1 when some are left after WAIT.
ns_sigkill() {
  local ns="$1" wait="${2:-}" pids i
  mapfile -t pids < <(ns_pids "$ns")
  # shellcheck disable=SC2034 # NS_KILLED and NS_LEFT are the caller's to read
  NS_KILLED="${#pids[@]}"
  NS_LEFT=0
  [ "${#pids[@]}" -eq 0 ] || kill -KILL "${pids[@]}" 2>/dev/null || true
  [ -n "$wait" ] || return 0
  for ((i = 0; i < wait * 20; i++)); do
    NS_LEFT="$(ns_pids "$ns" | wc -l)"
    [ "$NS_LEFT" -eq 0 ] && return 0
    sleep 0.05
  done
  return 1
}

# netns_teardown NAME WHERE BRIDGE [NS VETH]...: every process in the namespaces gets SIGTERM,
# then SIGKILL after STOP_TIMEOUT (NAME in term_wait's complaint; unless WHERE is "", a line
# "stopping N processes in WHERE" on stderr first), then the namespaces go, the host ends VETH of their veth pairs if left (VETH may
# be ""), and BRIDGE (may be ""). Whatever exists of it: a half-made setup goes too. Returns 1
# if any of it is left.
netns_teardown() {
  local name="$1" where="$2" br="$3" rc=0 pids nss=() veths=()
  shift 3
  while [ "$#" -ge 2 ]; do
    nss+=("$1")
    veths+=("$2")
    shift 2
  done
  mapfile -t pids < <(ns_pids "${nss[@]}")
  if [ "${#pids[@]}" -gt 0 ]; then
    [ -z "$where" ] || log "stopping ${#pids[@]} processes in $where"
    term_wait "$name" "${pids[@]}" || rc=1
  fi
  local i ns veth
  for i in "${!nss[@]}"; do
    ns="${nss[$i]}"
    veth="${veths[$i]}"
    if ns_exists "$ns"; then ip netns del "$ns" || rc=1; fi
    # Deleting the namespace deletes the pair; the host end may take a moment to go.
    if [ -n "$veth" ] && link_exists "$veth"; then
      ip link del "$veth" 2>/dev/null || ! link_exists "$veth" || rc=1
    fi
  done
  if [ -n "$br" ] && link_exists "$br"; then ip link del "$br" || rc=1; fi
  return "$rc"
}
