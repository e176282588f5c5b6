#!/usr/bin/env bash
# Installs, starts and stops the file servers that storlab's SMB and NFS tests and benchmarks
# use: Samba 4.17 and NFS-Ganesha 4.3 (Debian packages), each with 25 shares (exports): the
# file-server brief's 24 partitions + 1, five per client.
#
#   scripts/fileservers.sh install      install what is missing (idempotent; needs root)
#   scripts/fileservers.sh start DIR    start both with fresh shares under DIR, wait until
#                                       each answers, write DIR/env.sh
#   scripts/fileservers.sh stop DIR     stop everything started under DIR (also half-started)
#   scripts/fileservers.sh status DIR   show what runs and answers (exit 1 if not all do)
#   scripts/fileservers.sh failover DIR NFS node failover: SIGKILL Ganesha and rpcbind on the
#                                       serving node (its namespace), serve the same exports at
#                                       the same address from the other (a new namespace)
#   scripts/fileservers.sh restart-nfs DIR  start Ganesha (and rpcbind) again on its node
#
# (The RAID study's node failover runs under real Pacemaker and Corosync: scripts/pacemaker.sh.)
# The client LAN: a bridge on the host (10.214.Y.1/24), five client network namespaces on it
# (client1..client5 at 10.214.Y.11..15) and the NFS node (10.214.Y.2, after a failover too).
# Samba also listens on the bridge's address. A client namespace's traffic crosses a veth link
# and the bridge, as a real client's crosses its NIC and a switch: storlab runs a target's
# workers there with `[clients.NAME] netns = "..."` (env.sh: STORLAB_CLIENT1_NETNS..,
# STORLAB_LAN_SMB_SERVER, STORLAB_LAN_NFS_SERVER).
#
# Samba: smbd as root on 127.0.0.1 (port 54445, or the next free one; STORLAB_SMB_PORT forces
# one), every state, lock, private, pid and cache directory under DIR/samba, a tdbsam user
# `storlab` (mapped to root) with a random password, shares share1..share25 in DIR/samba/shareN,
# and a share `mount` on the empty directory DIR/samba/mount, for a test to mount a filesystem of
# its own on (tests/smb.rs mounts a slow FUSE file there: every request goes asynchronous).
# NFS: Ganesha refuses to start without rpcbind even for TCP-only NFSv3, and rpcbind binds
# every interface, so both run in a network namespace this script creates (named after DIR),
# reached over a veth link from the host: exports /export1../export25 (VFS FSAL,
# DIR/nfs/exportN), NFSv3 and NFSv4, TCP, no root squash, no grace period. Needs root.
# The Debian default instances are neither used nor started.
set -euo pipefail
SCRIPTS="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=scripts/tools-lib.sh
. "$SCRIPTS/tools-lib.sh"
# shellcheck source=scripts/netns-lib.sh
. "$SCRIPTS/netns-lib.sh"
# shellcheck source=scripts/ganesha-lib.sh
. "$SCRIPTS/ganesha-lib.sh"

SHARES=25
CLIENTS=5
START_TIMEOUT=60 # seconds each server gets to answer
SMB_USER=storlab

usage() {
  sed -n '6,14p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

cmd_install() {
  apt_install samba smbclient nfs-ganesha nfs-ganesha-vfs rpcbind libnfs-dev libnfs-utils iproute2 python3
}

# The network namespace of DIR's NFS server, and its veth ends (interface names: at most 15
# characters).
ns_name() { echo "storlab-nfs-$(dir_hash "$1" 8)"; }
veth_host() { echo "slnfs$(dir_hash "$1" 8)"; }
# Node B's (after a failover).
veth_host_b() { echo "slnfb$(dir_hash "$1" 8)"; }
# The client LAN's bridge, and client N's namespace.
lan_bridge() { echo "slbr$(dir_hash "$1" 8)"; }
client_ns() { echo "storlab-cl-$(dir_hash "$1" 8)-$2"; }

# ---------------------------------------------------------------------------------------------
# The client LAN

# lan_attach DIR NS VETH ADDR: a veth link from namespace NS (its end named lan0, at ADDR/24)
# to the LAN's bridge.
lan_attach() { veth_to_bridge "$2" "$3" "$(lan_bridge "$1")" lan0 "$4/24"; }

# start_lan DIR: the bridge (on a free 10.214.Y.0/24) and the client namespaces (nothing runs
# in them).
start_lan() {
  local dir="$1" y br i ns h
  br="$(lan_bridge "$dir")"
  h="$(dir_hash "$dir" 8)"
  mkdir -p "$dir/lan"
  netns_lock
  y="$(free_octet 10.214 "no free 10.214.Y.0/24 for the client LAN")"
  echo "$y" >"$dir/lan/subnet"
  bridge_add "$br" "10.214.$y.1/24"
  netns_unlock
  for ((i = 1; i <= CLIENTS; i++)); do
    ns="$(client_ns "$dir" "$i")"
    ip netns add "$ns"
    lan_attach "$dir" "$ns" "slcl$h$i" "10.214.$y.$((10 + i))"
    echo "$ns" >>"$dir/lan/clients"
  done
}

# stop_lan DIR: the client namespaces (and anything left running in them) and the bridge.
stop_lan() {
  local dir="$1" i links=()
  for ((i = 1; i <= CLIENTS; i++)); do links+=("$(client_ns "$dir" "$i")" ""); done
  netns_teardown "client namespaces" "" "$(lan_bridge "$dir")" "${links[@]}"
}

# ---------------------------------------------------------------------------------------------
# Samba

start_samba() {
  local dir="$1" port="$2" root="$1/samba" i
  command -v smbd >/dev/null || die "Samba: smbd missing: run scripts/fileservers.sh install"
  mkdir -p "$root"/{private,lock,state,cache,run,ncalrpc}
  local password
  password="$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
  {
    cat <<EOF
# storlab scripts/fileservers.sh: loopback only, every directory under $root
[global]
  server role = standalone server
  workgroup = STORLAB
  smb ports = $port
  interfaces = 127.0.0.1 10.214.$(cat "$dir/lan/subnet").1
  bind interfaces only = yes
  disable netbios = yes
  passdb backend = tdbsam:$root/private/passdb.tdb
  username map = $root/users.map
  private dir = $root/private
  lock directory = $root/lock
  state directory = $root/state
  cache directory = $root/cache
  pid directory = $root/run
  ncalrpc dir = $root/ncalrpc
  log file = $root/smbd.log
  max log size = 10000
  load printers = no
  printcap name = /dev/null
  disable spoolss = yes
  server min protocol = SMB2_10
EOF
    for ((i = 1; i <= SHARES; i++)); do
      mkdir -p "$root/share$i"
      printf '[share%d]\n  path = %s\n  read only = no\n' "$i" "$root/share$i"
    done
    mkdir -p "$root/mount"
    printf '[mount]\n  path = %s\n  read only = no\n' "$root/mount"
  } >"$root/smb.conf"
  # The SMB user `storlab` is the Unix user root (smbd runs as root; the shares are root's).
  echo "root = $SMB_USER" >"$root/users.map"
  printf '%s\n%s\n' "$password" "$password" | smbpasswd -c "$root/smb.conf" -s -a root >"$root/smbpasswd.log" 2>&1 ||
    fail_server Samba "$root/smbpasswd.log" "smbpasswd could not add the user"
  echo "$password" >"$root/password"
  chmod 600 "$root/password"
  (
    cd "$root" || exit 1
    exec setsid smbd --foreground --no-process-group -s "$root/smb.conf"
  ) </dev/null >"$root/smbd.out" 2>&1 &
  echo "$port" >"$root/port"
  for ((i = 0; i < START_TIMEOUT * 10; i++)); do
    if smbclient -p "$port" -U "$SMB_USER%$password" //127.0.0.1/share1 -c ls >/dev/null 2>&1; then
      echo "smb://$SMB_USER:$password@127.0.0.1:$port" >"$root/url"
      return 0
    fi
    if [ "$i" -gt 20 ] && ! alive "$(pidfile_pid "$root/run/smbd.pid")"; then
      fail_server Samba "$root/smbd.log" "exited before answering on 127.0.0.1:$port (output: $root/smbd.out)"
    fi
    sleep 0.1
  done
  fail_server Samba "$root/smbd.log" "did not answer on 127.0.0.1:$port within ${START_TIMEOUT}s"
}

# smbd's main process and the children it forked for connections: every smbd whose command
# line names DIR's configuration.
samba_pids() {
  local conf="$1/samba/smb.conf" pid
  for pid in $(pgrep -x smbd 2>/dev/null || true); do
    [[ "$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" == *"-s $conf "* ]] && echo "$pid"
  done
  return 0
}

# ---------------------------------------------------------------------------------------------
# NFS-Ganesha, with rpcbind, in its own network namespace

# make_node NS VETH X DIR: a namespace reached from the host over a veth link, the host at
# 10.213.X.1, the namespace at 10.213.X.2, and on DIR's client LAN at 10.214.Y.2.
make_node() {
  local ns="$1" veth="$2" x="$3" dir="$4"
  ip netns add "$ns"
  veth_to_host "$ns" "$veth" "${veth}n" "10.213.$x.1/30" "10.213.$x.2/30"
  lan_attach "$dir" "$ns" "${veth}l" "10.214.$(cat "$dir/lan/subnet").2"
}

# run_ganesha NS ROOT: rpcbind and Ganesha in namespace NS, serving ROOT/ganesha.conf, both in
# a mount namespace of their own with a private /run: rpcbind locks /run/rpcbind.lock and
# Ganesha registers through /run/rpcbind.sock, so two nodes (two DIRs) never meet there.
run_ganesha() {
  local ns="$1" root="$2"
  # Both daemonize; they are found again as the processes of the namespace (stop_ganesha).
  # shellcheck disable=SC2016 # expanded by the inner shell
  ip netns exec "$ns" unshare --mount --propagation private sh -c '
    mount -t tmpfs -o mode=755 storlab-run /run && mkdir -p /run/rpcbind || exit 1
    rpcbind -w || { echo "rpcbind did not start"; exit 1; }
    exec ganesha.nfsd -f "$1/ganesha.conf" -L "$1/ganesha.log" -p "$1/ganesha.pid" -N NIV_EVENT
  ' sh "$root" >"$root/ganesha.out" 2>&1 ||
    fail_server NFS-Ganesha "$root/ganesha.log" "rpcbind or ganesha.nfsd failed to start in namespace $ns (output: $root/ganesha.out)"
}

# wait_nfs ROOT ADDR: until the first export answers.
wait_nfs() {
  local root="$1" addr="$2" i
  for ((i = 0; i < START_TIMEOUT * 10; i++)); do
    if nfs-ls "nfs://$addr/export1?version=3" >/dev/null 2>&1; then
      return 0
    fi
    if [ "$i" -gt 30 ] && ! alive "$(pidfile_pid "$root/ganesha.pid")"; then
      fail_server NFS-Ganesha "$root/ganesha.log" "exited before answering on $addr"
    fi
    sleep 0.1
  done
  fail_server NFS-Ganesha "$root/ganesha.log" "did not answer on $addr within ${START_TIMEOUT}s"
}

# start_node DIR: NFS node A, its namespace and link (on a free 10.213.X.0/30), nothing
# running in it yet; ROOT/netns, ROOT/subnet and ROOT/url say where it is.
start_node() {
  local dir="$1" root="$1/nfs" ns x
  command -v ganesha.nfsd >/dev/null || die "NFS: ganesha.nfsd missing: run scripts/fileservers.sh install"
  is_root || die "NFS: creating the network namespace for rpcbind and Ganesha needs root"
  ns="$(ns_name "$dir")"
  mkdir -p "$root/recovery"
  echo "$ns" >"$root/netns"
  netns_lock
  x="$(free_octet 10.213 "NFS: no free 10.213.X.0/30 for the namespace link")"
  echo "$x" >"$root/subnet"
  make_node "$ns" "$(veth_host "$dir")" "$x" "$dir"
  netns_unlock
  echo "nfs://10.213.$x.2" >"$root/url"
}

start_ganesha() {
  local dir="$1" root="$1/nfs" i
  start_node "$dir"
  local ns addr
  ns="$(cat "$root/netns")"
  addr="10.213.$(cat "$root/subnet").2"
  {
    ganesha_conf_head "storlab scripts/fileservers.sh: inside network namespace $ns ($addr)" "$root/recovery"
    for ((i = 1; i <= SHARES; i++)); do
      mkdir -p "$root/export$i"
      ganesha_export "$i" "$root/export$i" "/export$i"
    done
  } >"$root/ganesha.conf"
  run_ganesha "$ns" "$root"
  wait_nfs "$root" "$addr"
}

# Stops Ganesha and rpcbind on node A and, after a failover, node B: every process in their
# namespaces (this script's own), the namespaces and their host links (a namespace that
# killed servers' TCP connections keep alive would keep them).
stop_ganesha() {
  local ns a b
  ns="$(ns_name "$1")"
  a="$(veth_host "$1")"
  b="$(veth_host_b "$1")"
  netns_teardown "namespace $ns" "" "" "$ns" "$a" "${ns}-b" "$b" || return 1
  local v
  for v in "${a}l" "${b}l"; do
    if link_exists "$v"; then ip link del "$v" 2>/dev/null || ! link_exists "$v" || return 1; fi
  done
}

stop_all() {
  local dir="$1" quiet="${2:-}" rc=0 pids
  pids="$(samba_pids "$dir" | tr '\n' ' ')"
  if [ -n "$pids" ]; then
    [ -n "$quiet" ] || log "Samba: stopping $pids"
    # shellcheck disable=SC2086
    term_wait Samba $pids || rc=1
  fi
  stop_ganesha "$dir" || rc=1
  stop_lan "$dir" || rc=1
  return "$rc"
}

# ---------------------------------------------------------------------------------------------
# commands

cmd_start() {
  local dir t
  dir="$(resolve_dir "${1:-}")"
  t="$(now)"
  stop_all "$dir" quiet || die "could not stop the file servers left in $dir"
  rm -rf "$dir/samba" "$dir/nfs" "$dir/lan"
  trap 'rc=$?; if [ "$rc" -ne 0 ]; then log "start failed: stopping what was started in '"$dir"'"; stop_all "'"$dir"'" quiet || true; fi' EXIT
  local port
  port="$(pick_port Samba 54445 "${STORLAB_SMB_PORT:-}")"
  is_root || die "the client LAN (a bridge and client network namespaces) needs root"
  start_lan "$dir"
  start_samba "$dir" "$port"
  start_ganesha "$dir"
  local smb nfs
  smb="$(cat "$dir/samba/url")"
  nfs="$(cat "$dir/nfs/url")"
  cat >"$dir/env.sh" <<EOF
# written by scripts/fileservers.sh start $dir
export STORLAB_SMB_SERVER='$smb'
export STORLAB_SMB_URL='$smb/share1'
export STORLAB_SMB_SHARES_DIR='$dir/samba'
export STORLAB_SMB_SHARE_DIR='$dir/samba/share1'
export STORLAB_SMB_MOUNT_SHARE_DIR='$dir/samba/mount'
export STORLAB_SMB_PID_FILE='$dir/samba/run/smbd.pid'
export STORLAB_NFS_SERVER='$nfs'
export STORLAB_NFS_URL='$nfs/export1'
export STORLAB_NFS_EXPORTS_DIR='$dir/nfs'
export STORLAB_NFS_EXPORT_DIR='$dir/nfs/export1'
export STORLAB_NFS_PID_FILE='$dir/nfs/ganesha.pid'
export STORLAB_NFS_NETNS='$(cat "$dir/nfs/netns")'
export STORLAB_FILE_SHARES=$SHARES
export STORLAB_FILESERVERS_DIR='$dir'
export STORLAB_FILESERVERS_SCRIPT='$SCRIPTS/fileservers.sh'
export STORLAB_LAN_SMB_SERVER='smb://$SMB_USER:$(cat "$dir/samba/password")@10.214.$(cat "$dir/lan/subnet").1:$port'
export STORLAB_LAN_NFS_SERVER='nfs://10.214.$(cat "$dir/lan/subnet").2'
$(i=0; while read -r ns; do i=$((i + 1)); echo "export STORLAB_CLIENT${i}_NETNS='$ns'"; done <"$dir/lan/clients")
EOF
  trap - EXIT
  log "Samba on 127.0.0.1:$port, NFS-Ganesha on ${nfs#nfs://} (namespace $(cat "$dir/nfs/netns")), $SHARES shares each, up in $(elapsed "$t") s; source $dir/env.sh"
}

cmd_stop() {
  local dir
  dir="$(resolve_dir "${1:-}")"
  stop_all "$dir" || die "some file server under $dir did not stop"
  log "stopped the file servers under $dir"
}

cmd_status() {
  local dir ok=0
  dir="$(resolve_dir "${1:-}")"
  if [ -r "$dir/samba/url" ] && [ -n "$(samba_pids "$dir")" ] &&
    smbclient -p "$(cat "$dir/samba/port")" -U "$SMB_USER%$(cat "$dir/samba/password")" //127.0.0.1/share1 -c ls >/dev/null 2>&1; then
    echo "Samba: answers on 127.0.0.1:$(cat "$dir/samba/port")"
  else
    echo "Samba: not running or not answering"
    ok=1
  fi
  if [ -r "$dir/nfs/url" ] && nfs-ls "$(cat "$dir/nfs/url")/export1?version=3" >/dev/null 2>&1; then
    echo "NFS-Ganesha: answers on $(sed 's|nfs://||' "$dir/nfs/url") (namespace $(cat "$dir/nfs/netns"))"
  else
    echo "NFS-Ganesha: not running or not answering"
    ok=1
  fi
  return "$ok"
}

# An NFS node failover: the serving node's Ganesha and rpcbind die at once (SIGKILL, as a node
# losing power), its namespace and link go; the other node (B after A, A after B), a new
# namespace at the same address, serves the same exports (the same storage) once it answers.
# Prints the seconds from the kill to node B answering.
cmd_failover() {
  local dir t
  dir="$(resolve_dir "${1:-}")"
  local root="$dir/nfs" ns x
  [ -r "$root/subnet" ] || die "no NFS server was started under $dir"
  ns="$(cat "$root/netns")"
  x="$(cat "$root/subnet")"
  # The other node: B after A, A after B.
  local ns_b veth_b veth_a
  if [ "$ns" = "$(ns_name "$dir")" ]; then
    ns_b="${ns}-b"
    veth_a="$(veth_host "$dir")"
    veth_b="$(veth_host_b "$dir")"
  else
    ns_b="$(ns_name "$dir")"
    veth_a="$(veth_host_b "$dir")"
    veth_b="$(veth_host "$dir")"
  fi
  # The lock: no script takes the subnet while it is on no link.
  netns_lock
  t="$(now)"
  ns_sigkill "$ns"
  ip netns del "$ns"
  # The lost node's links go with it. Deleting its namespace's name is not enough: TCP
  # connections its killed server left behind (data unacknowledged by the clients, its links
  # down) keep the namespace, and with it the link and the address, alive for minutes.
  local v
  for v in "$veth_a" "${veth_a}l"; do
    ip link del "$v" 2>/dev/null || true
  done
  local i
  for ((i = 0; i < 50; i++)); do
    host_has_addr "10.213.$x.1" || break
    sleep 0.1
  done
  make_node "$ns_b" "$veth_b" "$x" "$dir"
  netns_unlock
  echo "$ns_b" >"$root/netns"
  run_ganesha "$ns_b" "$root"
  wait_nfs "$root" "10.213.$x.2"
  log "NFS failed over from $ns to $ns_b (10.213.$x.2) in $(elapsed "$t") s"
  elapsed "$t"
  echo
}

# Starts the NFS node's rpcbind and Ganesha again (after an event killed Ganesha): whatever is
# left in the node's namespace is stopped first.
cmd_restart_nfs() {
  local dir
  dir="$(resolve_dir "${1:-}")"
  local root="$dir/nfs" ns pids
  [ -r "$root/netns" ] || die "no NFS server was started under $dir"
  ns="$(cat "$root/netns")"
  mapfile -t pids < <(ns_pids "$ns")
  [ "${#pids[@]}" -eq 0 ] || term_wait "namespace $ns" "${pids[@]}" || die "could not stop what was left in $ns"
  run_ganesha "$ns" "$root"
  wait_nfs "$root" "$(sed 's|nfs://||' "$root/url")"
}

case "${1:-}" in
install) cmd_install ;;
start) cmd_start "${2:-}" ;;
stop) cmd_stop "${2:-}" ;;
status) cmd_status "${2:-}" ;;
failover) cmd_failover "${2:-}" ;;
restart-nfs) cmd_restart_nfs "${2:-}" ;;
*) usage ;;
esac
