#!/usr/bin/env bash
# The RAID brief's high availability with real Pacemaker 2.1 and Corosync 3 (Debian packages):
# two cluster nodes `a` and `b` on this one machine, each a network namespace, a mount and UTS
# namespace of its own and a cgroup v2 group, moving a storage array's mount, its service
# address and its NFS-Ganesha export between them. Needs root.
#
#   scripts/pacemaker.sh install          install what is missing (idempotent)
#   scripts/pacemaker.sh start DIR [DEVICE MOUNTPOINT [FSTYPE [OPTIONS]]]
#                                         both nodes, Corosync and Pacemaker and the fencing
#                                         devices; returns once both nodes are online (prints
#                                         the seconds). With DEVICE, `serve` follows
#   scripts/pacemaker.sh serve DIR [--node-cache STORLAB] [DEVICE MOUNTPOINT [FSTYPE [OPTIONS]]]
#                                         the array's resource group, created in the running
#                                         cluster (for an array made after the start); returns
#                                         once it runs on a and the export answers. Without
#                                         DEVICE: a 256 MiB ext4 file on a loop device under
#                                         DIR, mounted at DIR/mnt. OPTIONS: mount's -o (a Btrfs
#                                         over several devices: device=M0,device=M1,...).
#                                         --node-cache: each node reaches the members (DEVICE
#                                         and each device= of OPTIONS) through its own volatile
#                                         write cache, `STORLAB volatile-fs` run in the node
#                                         (scripts/ha/members, the group's first resource), so
#                                         that its power loss loses what it did not flush
#                                         (STORLAB_HA_CACHE_DIRTY_LIMIT: what a node may hold,
#                                         1GiB; env.sh's STORLAB_HA_NODE_CACHE names the binary)
#   scripts/pacemaker.sh stop DIR         stop everything started under DIR (also half-started)
#   scripts/pacemaker.sh status DIR       crm_mon -1 of a live node
#   scripts/pacemaker.sh where DIR        the node that runs the group now (a, b or nothing)
#   scripts/pacemaker.sh answers DIR [NODE]  exit 0 when the export answers at the service
#                                         address (and, with NODE, the group runs on NODE)
#   scripts/pacemaker.sh netns DIR NODE   NODE's network namespace (for storlab's power-off)
#   scripts/pacemaker.sh power-off DIR NODE [NOWAIT]  power loss of NODE: cgroup.kill of its
#                                         group, its link gone; then (unless NOWAIT) waits for
#                                         the survivor to fence it, run the group and answer,
#                                         and prints the seconds each took
#   scripts/pacemaker.sh power-on DIR NODE  boot NODE again (link, Corosync, Pacemaker); returns
#                                         once it is online in the cluster. Also after storlab's
#                                         power-off event (namespace left, links down): the
#                                         namespace and link are made anew
#   scripts/pacemaker.sh failback DIR     move the group back to node a (a move constraint,
#                                         cleared once the export answers there)
#   scripts/pacemaker.sh crm DIR NODE CMD...  CMD (crm_mon, crm_resource, cibadmin...) in
#                                         NODE's namespaces
#
# Layout (HHHHHH: from DIR): a bridge slhaHHHHHH on the host at 10.216.X.1/24 (X: the first
# 10.216.X.0/24 no interface uses, scripts/netns-lib.sh; 10.213-10.215 are the other scripts');
# node a in namespace storlab-ha-HHHHHH-a at 10.216.X.11 (interface ha0), node b at .12, a
# client namespace storlab-ha-HHHHHH-client at .21; the service address 10.216.X.2, where the
# group serves the array as nfs://10.216.X.2/export. Corosync: knet over ha0, two_node, a 1 s
# token. A node's processes run in the cgroup v2 group storlab-ha-HHHHHH-NODE (cgroup.kill is
# its power switch) and in mount and UTS namespaces of its own: hostname NODE, tmpfs on /run
# and /dev/shm (libqb's IPC), and DIR/nodes/NODE/{etc-corosync,var-lib-corosync,
# var-lib-pacemaker,log-corosync,log-pacemaker} bound over /etc/corosync, /var/lib/corosync,
# /var/lib/pacemaker, /var/log/corosync and /var/log/pacemaker; read-only overlays add our
# agents to the paths Pacemaker finds them in (scripts/ha/fence_storlab_cgroup in /usr/sbin,
# scripts/ha/ganesha as ocf:storlab:ganesha).
# The CIB (DIR/ha/cib.xml, on both nodes' disks before the first start): per node a fencing
# device fence-NODE (stonith:fence_storlab_cgroup, logging to DIR/fencing.log, never run by the
# node it fences; stonith-action=off), resource-stickiness 200 (after a failover the group stays
# on b until `failback`). `serve` adds (cibadmin) the group `array`: array-fs
# (ocf:heartbeat:Filesystem), array-ip (ocf:heartbeat:IPaddr2, 10.216.X.2/24 on ha0), array-nfs
# (ocf:storlab:ganesha, DIR/ha/ganesha.conf: MOUNTPOINT as /export), located on a (score 100).
# Environment: STORLAB_HA_TOKEN_MS (Corosync's token, 1000), STORLAB_HA_DC_DEADTIME (Pacemaker's
# dc-deadtime in seconds, 2), STORLAB_HA_START_TIMEOUT (seconds each wait gets, 120),
# STORLAB_HA_FENCE_DELAY (priority-fencing-delay in seconds, 0: see below),
# STORLAB_HA_PROBE_TIMEOUT (seconds one `answers` probe gets, 2: a probe sent to the lost node's
# address hangs in TCP's SYN retries, so a long one would see the new node late).
# Known limits: with STORLAB_HA_FENCE_DELAY=0, a split of the link (both nodes alive) is a
# fencing race either node may win (the one that cannot be reached too); 3 makes the node that
# runs the group win, and adds 3 s to the failover after its power-off. A split within the
# first ~0.5 s of a node's (re)join, before its controller joined, was seen to start the group
# on both nodes without fencing (Pacemaker's view: the peer never joined, so it left cleanly);
# power-on returns only once both nodes see each other online.
set -euo pipefail
SCRIPTS="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=scripts/tools-lib.sh
. "$SCRIPTS/tools-lib.sh"
# shellcheck source=scripts/netns-lib.sh
. "$SCRIPTS/netns-lib.sh"
# shellcheck source=scripts/ganesha-lib.sh
. "$SCRIPTS/ganesha-lib.sh"
# shellcheck source=scripts/pcmk-lib.sh
. "$SCRIPTS/pcmk-lib.sh"

NODES=(a b)
START_TIMEOUT="${STORLAB_HA_START_TIMEOUT:-120}" # seconds to wait for nodes, the group, answers
CACHE_DIRTY_LIMIT="${STORLAB_HA_CACHE_DIRTY_LIMIT:-1GiB}" # serve --node-cache: what a node may hold
TOKEN_MS="${STORLAB_HA_TOKEN_MS:-1000}"          # Corosync's token timeout
# Pacemaker's priority-fencing-delay (seconds): in a split (the link lost, both nodes alive),
# fencing the node that runs the group waits this long, so that node wins the fencing race. 0:
# the fastest failover after a power-off, but in a split either node may fence the other.
FENCE_DELAY="${STORLAB_HA_FENCE_DELAY:-0}"
# Pacemaker's dc-deadtime (seconds): how long a starting node waits for a DC before an election.
DC_DEADTIME="${STORLAB_HA_DC_DEADTIME:-2}"
PROBE_TIMEOUT="${STORLAB_HA_PROBE_TIMEOUT:-2}"
IMAGE_MB=256

usage() {
  sed -n '7,43p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

cmd_install() {
  local fresh=0
  dpkg -s pacemaker >/dev/null 2>&1 || fresh=1
  apt_install pacemaker pacemaker-cli-utils corosync resource-agents kmod \
    nfs-ganesha nfs-ganesha-vfs rpcbind libnfs-utils iproute2 util-linux e2fsprogs
  # Debian's packages enable system services: where this installed them and systemd runs, they
  # are disabled (a host-wide Corosync and Pacemaker would start at the next boot, with
  # Debian's one-node configuration, beside nothing of ours).
  if [ "$fresh" -eq 1 ] && [ -d /run/systemd/system ]; then
    $SUDO systemctl disable --now pacemaker.service corosync.service >/dev/null 2>&1 || true
  fi
}

# ---------------------------------------------------------------------------------------------
# names

h() { dir_hash "$1" 6; }
bridge() { echo "slha$(h "$1")"; }
node_ns() { echo "storlab-ha-$(h "$1")-$2"; }
client_ns() { echo "storlab-ha-$(h "$1")-client"; }
# The host end of a namespace's veth (a, b, or c for the client).
node_veth() { echo "slha$(h "$1")${2:0:1}"; }
cg_name() { echo "storlab-ha-$(h "$1")-$2"; }
# The cgroup2 mount on the host (/sys/fs/cgroup, or /sys/fs/cgroup/unified on a hybrid layout).
cg_root() {
  local r
  r="$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)"
  [ -n "$r" ] || die "no cgroup2 mount on this machine"
  echo "$r"
}
cg_dir() { echo "$(cg_root)/$(cg_name "$1" "$2")"; }
subnet() { cat "$1/ha/subnet"; }
node_addr() { case "$2" in a) echo "10.216.$(subnet "$1").11" ;; b) echo "10.216.$(subnet "$1").12" ;; esac; }
service_addr() { echo "10.216.$(subnet "$1").2"; }
client_addr() { echo "10.216.$(subnet "$1").21"; }
export_url() { echo "nfs://$(service_addr "$1")/export?version=3"; }
other() { if [ "$1" = a ]; then echo b; else echo a; fi; }
check_node() { [ "$1" = a ] || [ "$1" = b ] || die "NODE must be a or b, not '$1'"; }

# ---------------------------------------------------------------------------------------------
# cgroups: a node's processes

# cg_pids DIR NODE: every process in the node's group.
cg_pids() {
  local f
  f="$(cg_dir "$1" "$2")/cgroup.procs"
  if [ -r "$f" ]; then cat "$f" 2>/dev/null || true; fi
}

# cg_named DIR NODE COMM: the pids of the node's processes named COMM.
cg_named() {
  local pid
  for pid in $(cg_pids "$1" "$2"); do
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$3" ] && echo "$pid"
  done
  return 0
}

# cg_kill DIR NODE [WAIT]: cgroup.kill (every process of the node dies at once) and, with WAIT
# seconds, until the group is empty (returns 1 if it is not).
cg_kill() {
  local g i
  g="$(cg_dir "$1" "$2")"
  [ -e "$g/cgroup.kill" ] || return 0
  echo 1 >"$g/cgroup.kill"
  [ -n "${3:-}" ] || return 0
  for ((i = 0; i < $3 * 20; i++)); do
    [ -n "$(cg_pids "$1" "$2")" ] || return 0
    sleep 0.05
  done
  return 1
}

# node_pid DIR NODE: the node's init (the shell that started its daemons and waits for them),
# whose namespaces are the node's; "" when the node is off.
node_pid() {
  local pid
  pid="$(pidfile_pid "$1/nodes/$2/pid")"
  [ -n "$pid" ] && alive "$pid" && [[ " $(cg_pids "$1" "$2" | tr '\n' ' ') " == *" $pid "* ]] && echo "$pid"
  return 0
}

# in_node DIR NODE CMD...: CMD in the node's network, mount and UTS namespaces.
in_node() {
  local dir="$1" node="$2" pid
  shift 2
  pid="$(node_pid "$dir" "$node")"
  [ -n "$pid" ] || die "node $node is not running"
  nsenter --target "$pid" --net --mount --uts "$@"
}

# live_node DIR: a node that runs (a first).
live_node() {
  local n
  for n in "${NODES[@]}"; do
    [ -z "$(node_pid "$1" "$n")" ] || {
      echo "$n"
      return 0
    }
  done
  return 1
}

# ---------------------------------------------------------------------------------------------
# configuration files

write_corosync_conf() {
  local x
  x="$(subnet "$1")"
  pcmk_corosync_conf "storlab-$(h "$1")" "$TOKEN_MS" "a=10.216.$x.11" "b=10.216.$x.12"
}

# ganesha.conf (scripts/ganesha-lib.sh): one export, MOUNTPOINT as /export.
write_ganesha_conf() {
  local dir="$1" mnt="$2"
  ganesha_conf_head "storlab scripts/pacemaker.sh: the array's export, on the node that runs the group" "$dir/ha/recovery"
  ganesha_export 1 "$mnt" /export
}

nv() { pcmk_nv "$@"; }

fence_primitive() { pcmk_fence_primitive "$2" "storlab-ha-$(h "$1")-" "$1/fencing.log" 30s; }

# write_cib DIR: the CIB before the first start: the options and the fencing devices (`serve`
# adds the array's group).
write_cib() {
  local dir="$1"
  cat <<EOF
<cib crm_feature_set="3.16.1" validate-with="pacemaker-3.9" epoch="1" num_updates="0" admin_epoch="0">
  <configuration>
    <crm_config>
      <cluster_property_set id="cib-bootstrap-options">
$(nv o-cluster-name cluster-name "storlab-$(h "$dir")")
$(nv o-stonith-enabled stonith-enabled true)
$(nv o-stonith-action stonith-action off)
$(nv o-stonith-timeout stonith-timeout 30s)
$(nv o-dc-deadtime dc-deadtime "${DC_DEADTIME}s")
$(nv o-no-quorum-policy no-quorum-policy stop)
$(nv o-recheck cluster-recheck-interval 1min)
$(nv o-priority-fencing-delay priority-fencing-delay "${FENCE_DELAY}s")
      </cluster_property_set>
    </crm_config>
    <nodes/>
    <resources>
$(fence_primitive "$dir" a)
$(fence_primitive "$dir" b)
    </resources>
    <constraints>
      <rsc_location id="fence-a-not-on-a" rsc="fence-a" node="a" score="-INFINITY"/>
      <rsc_location id="fence-b-not-on-b" rsc="fence-b" node="b" score="-INFINITY"/>
    </constraints>
EOF
  pcmk_cib_tail 200
}

# member_devices DEVICE OPTIONS: the array's member devices, one per line: each device=X of
# OPTIONS in order, or DEVICE alone when OPTIONS names none.
member_devices() {
  local o found=0
  local IFS=,
  for o in $2; do
    case "$o" in device=*) echo "${o#device=}" && found=1 ;; esac
  done
  [ "$found" -eq 1 ] || echo "$1"
}

# node_view DIR NODE DEVICE OPTIONS: "DEVICE OPTIONS" as NODE sees them through its cache: each
# member device replaced by DIR/nodes/NODE/dev/mK (scripts/ha/members makes the link).
node_view() {
  local dir="$1" n="$2" dev="$3" opts="$4" k m out="" o
  local -a members
  local -A path_of
  mapfile -t members < <(member_devices "$dev" "$opts")
  for k in "${!members[@]}"; do path_of["${members[$k]}"]="$dir/nodes/$n/dev/m$k"; done
  local IFS=,
  for o in $opts; do
    m="${o#device=}"
    [ "$m" = "$o" ] || [ -z "${path_of[$m]:-}" ] || o="device=${path_of[$m]}"
    out="${out:+$out,}$o"
  done
  printf '%s %s\n' "${path_of[$dev]:-$dev}" "$out"
}

# fs_device_attrs DIR DEVICE OPTIONS CACHE: the filesystem's device and options: as given, or
# (with CACHE) per node, each node's own path through its cache (a rule on #uname).
fs_device_attrs() {
  local dir="$1" dev="$2" opts="$3" cache="$4" n view
  if [ -z "$cache" ]; then
    echo '          <instance_attributes id="array-fs-dev">'
    nv array-fs-device device "$dev"
    [ -z "$opts" ] || nv array-fs-options options "$opts"
    echo '          </instance_attributes>'
    return
  fi
  for n in "${NODES[@]}"; do
    view="$(node_view "$dir" "$n" "$dev" "$opts")"
    echo "          <instance_attributes id=\"array-fs-on-$n\" score=\"1\">"
    echo "            <rule id=\"array-fs-on-$n-rule\" score=\"0\"><expression id=\"array-fs-on-$n-expr\" attribute=\"#uname\" operation=\"eq\" value=\"$n\"/></rule>"
    nv "array-fs-device-$n" device "${view%% *}"
    [ -z "$opts" ] || nv "array-fs-options-$n" options "${view#* }"
    echo '          </instance_attributes>'
  done
}

# members_primitive DIR DEVICE OPTIONS CACHE: with CACHE (the storlab binary), the group's first
# resource: the node's path to the members through its volatile write cache.
members_primitive() {
  local dir="$1" dev="$2" opts="$3" cache="$4" k=0 m list=""
  [ -n "$cache" ] || return 0
  while read -r m; do
    list="${list:+$list }m$k=$m"
    k=$((k + 1))
  done < <(member_devices "$dev" "$opts")
  cat <<EOF
        <primitive id="array-members" class="ocf" provider="storlab" type="members">
          <instance_attributes id="array-members-ia">
$(nv array-members-storlab storlab "$cache")
$(nv array-members-members members "$list")
$(nv array-members-state state "$dir/nodes")
$(nv array-members-dirty dirty_limit "$CACHE_DIRTY_LIMIT")
$(nv array-members-host host_netns "$dir/ha/host-netns")
          </instance_attributes>
          <operations>
            <op id="array-members-start" name="start" interval="0" timeout="60s"/>
            <op id="array-members-stop" name="stop" interval="0" timeout="90s"/>
            <op id="array-members-monitor" name="monitor" interval="10s" timeout="20s"/>
          </operations>
        </primitive>
EOF
}

# write_group DIR DEVICE MOUNTPOINT FSTYPE OPTIONS CACHE: the array's group, for cibadmin
# --create.
write_group() {
  local dir="$1" dev="$2" mnt="$3" fstype="$4" opts="$5" cache="$6"
  cat <<EOF
      <group id="array">
        <meta_attributes id="array-meta">
$(nv array-priority priority 10)
$(nv array-target-role target-role Stopped)
        </meta_attributes>
$(members_primitive "$dir" "$dev" "$opts" "$cache")
        <primitive id="array-fs" class="ocf" provider="heartbeat" type="Filesystem">
          <instance_attributes id="array-fs-ia">
$(nv array-fs-directory directory "$mnt")
$(nv array-fs-fstype fstype "$fstype")
$(nv array-fs-force force_unmount false)
          </instance_attributes>
$(fs_device_attrs "$dir" "$dev" "$opts" "$cache")
          <operations>
            <op id="array-fs-start" name="start" interval="0" timeout="60s"/>
            <op id="array-fs-stop" name="stop" interval="0" timeout="60s"/>
            <op id="array-fs-monitor" name="monitor" interval="10s" timeout="40s"/>
          </operations>
        </primitive>
        <primitive id="array-ip" class="ocf" provider="heartbeat" type="IPaddr2">
          <instance_attributes id="array-ip-ia">
$(nv array-ip-ip ip "$(service_addr "$dir")")
$(nv array-ip-mask cidr_netmask 24)
$(nv array-ip-nic nic ha0)
          </instance_attributes>
          <operations>
            <op id="array-ip-monitor" name="monitor" interval="5s" timeout="20s"/>
          </operations>
        </primitive>
        <primitive id="array-nfs" class="ocf" provider="storlab" type="ganesha">
          <instance_attributes id="array-nfs-ia">
$(nv array-nfs-config config "$dir/ha/ganesha.conf")
          </instance_attributes>
          <operations>
            <op id="array-nfs-start" name="start" interval="0" timeout="60s"/>
            <op id="array-nfs-stop" name="stop" interval="0" timeout="30s"/>
            <op id="array-nfs-monitor" name="monitor" interval="5s" timeout="20s"/>
          </operations>
        </primitive>
      </group>
EOF
}

# ---------------------------------------------------------------------------------------------
# nodes

node_dirs() { pcmk_node_dirs "$1/nodes/$2"; }

# node_link DIR NODE: the node's namespace and its link to the bridge (ha0), made anew.
node_link() {
  local dir="$1" n="$2" ns veth
  ns="$(node_ns "$dir" "$n")"
  veth="$(node_veth "$dir" "$n")"
  if ns_exists "$ns"; then ip netns del "$ns"; fi
  if link_exists "$veth"; then ip link del "$veth" 2>/dev/null || true; fi
  ip netns add "$ns"
  veth_to_bridge "$ns" "$veth" "$(bridge "$dir")" ha0 "$(node_addr "$dir" "$n")/24"
}

# node_boot DIR NODE: the node's processes, all in its cgroup from the first one on (the shell
# joins the group, then execs into the namespaces), output in DIR/nodes/NODE/console.log.
node_boot() {
  local dir="$1" n="$2" g
  g="$(cg_dir "$dir" "$n")"
  mkdir -p "$g"
  [ -z "$(cg_pids "$dir" "$n")" ] || die "node $n still has processes in $g"
  rm -f "$dir/nodes/$n/pid"
  # shellcheck disable=SC2016 # $$ is the inner shell's
  setsid sh -c 'echo $$ >"$1/cgroup.procs" && echo $$ >"$2" && shift 2 && exec "$@"' sh \
    "$g" "$dir/nodes/$n/pid" \
    ip netns exec "$(node_ns "$dir" "$n")" unshare --mount --uts --propagation private \
    sh -c "$PCMK_NODE_INIT" sh "$dir/nodes/$n" "$n" "$dir/ha/sbin" "$dir/ha/ocf" </dev/null >>"$dir/nodes/$n/console.log" 2>&1 &
}

# online DIR NODE [FROM]: crm_mon on FROM (default: a live node) shows NODE online.
online() {
  local dir="$1" n="$2" from="${3:-}" out
  [ -n "$from" ] || from="$(live_node "$dir")" || return 1
  [ -n "$(node_pid "$dir" "$from")" ] || return 1
  out="$(in_node "$dir" "$from" crm_mon -1 --output-as=xml 2>/dev/null)" || return 1
  pcmk_online "$out" "$n"
}

# located DIR: the node that runs array-nfs (the group's last member: the whole group runs),
# as the first live node that knows says (a node that just joined may not know yet).
located() {
  local dir="$1" n out
  for n in "${NODES[@]}"; do
    [ -n "$(node_pid "$dir" "$n")" ] || continue
    out="$(in_node "$dir" "$n" crm_resource --locate --resource array-nfs 2>/dev/null)" || continue
    # "resource array-nfs is running on: b"
    if [[ "$out" =~ running\ on:\ ([ab]) ]]; then
      echo "${BASH_REMATCH[1]}"
      return 0
    fi
  done
  return 0
}

answers() { timeout "$PROBE_TIMEOUT" nfs-ls "$(export_url "$1")" >/dev/null 2>&1; }
client_answers() { timeout "$PROBE_TIMEOUT" ip netns exec "$(client_ns "$1")" nfs-ls "$(export_url "$1")" >/dev/null 2>&1; }

# wait_for WHAT SECONDS CMD...: until CMD succeeds (every 0.1 s); dies after SECONDS.
wait_for() {
  local what="$1" secs="$2" end
  shift 2
  end=$((SECONDS + secs))
  while [ "$SECONDS" -lt "$end" ]; do
    "$@" && return 0
    sleep 0.1
  done
  die "$what: not within ${secs}s"
}

# ---------------------------------------------------------------------------------------------
# stop

# node_halt DIR NODE: Pacemaker stops the node's resources and leaves the cluster (SIGTERM to
# pacemakerd), then Corosync; whatever is left after that (or after STOP_TIMEOUT) is killed
# with the group; the group goes.
node_halt() {
  local dir="$1" n="$2" g pids i
  g="$(cg_dir "$dir" "$n")"
  [ -d "$g" ] || return 0
  mapfile -t pids < <(cg_named "$dir" "$n" pacemakerd)
  if [ "${#pids[@]}" -gt 0 ]; then
    kill -TERM "${pids[@]}" 2>/dev/null || true
    for ((i = 0; i < 60 * 10; i++)); do
      [ -n "$(cg_named "$dir" "$n" pacemakerd)" ] || break
      sleep 0.1
    done
  fi
  mapfile -t pids < <(cg_named "$dir" "$n" corosync)
  [ "${#pids[@]}" -eq 0 ] || term_wait "corosync of node $n" "${pids[@]}" || true
  cg_kill "$dir" "$n" 20 || return 1
  rmdir "$g" 2>/dev/null || [ ! -d "$g" ]
}

stop_all() {
  local dir="$1" rc=0 n pids=()
  # Both nodes' Pacemakers at once (one alone would move the group to the other first).
  for n in "${NODES[@]}"; do
    [ -z "$(node_pid "$dir" "$n")" ] || mapfile -t -O "${#pids[@]}" pids < <(cg_named "$dir" "$n" pacemakerd)
  done
  [ "${#pids[@]}" -eq 0 ] || {
    log "stopping Pacemaker on both nodes"
    kill -TERM "${pids[@]}" 2>/dev/null || true
  }
  for n in "${NODES[@]}"; do node_halt "$dir" "$n" || rc=1; done
  netns_teardown "HA namespaces" "" "$(bridge "$dir")" \
    "$(node_ns "$dir" a)" "$(node_veth "$dir" a)" \
    "$(node_ns "$dir" b)" "$(node_veth "$dir" b)" \
    "$(client_ns "$dir")" "$(node_veth "$dir" c)" || rc=1
  # The loop devices the nodes' member caches left (scripts/ha/members: after a power loss
  # they point into a dead mount).
  local loop seq list
  for list in "$dir"/nodes/*/loops; do
    [ -r "$list" ] || continue
    while read -r loop seq; do
      # Only the attachment a node made (a number is reused once detached, its disk
      # sequence number is not).
      [ -n "$loop" ] || continue
      [ "$(cat "/sys/block/${loop#/dev/}/diskseq" 2>/dev/null)" = "$seq" ] || continue
      losetup -d "$loop" || rc=1
    done <"$list"
    rm -f "$list"
  done
  ! mountpoint -q "$dir/ha/host-netns" 2>/dev/null || umount "$dir/ha/host-netns" || rc=1
  # The loop device this script attached (the nodes' mounts went with their namespaces).
  loop="$(cat "$dir/ha/loop" 2>/dev/null || true)"
  if [ -n "$loop" ]; then
    if losetup "$loop" 2>/dev/null | grep -qF "$dir/array.img"; then
      losetup -d "$loop" || rc=1
    fi
    rm -f "$dir/ha/loop"
  fi
  return "$rc"
}

# ---------------------------------------------------------------------------------------------
# commands

# The storlab binary `serve --node-cache` runs in the nodes (env.sh's STORLAB_HA_NODE_CACHE):
# STORLAB_BIN, else this checkout's release build, else storlab on PATH; empty if none.
storlab_binary() {
  local b="${STORLAB_BIN:-}"
  [ -n "$b" ] || b="$SCRIPTS/../target/release/storlab"
  [ -x "$b" ] || b="$(command -v storlab || true)"
  [ -z "$b" ] || echo "$(cd "$(dirname "$b")" && pwd)/$(basename "$b")"
}

cmd_start() {
  local dir t n x
  dir="$(resolve_dir "${1:-}")"
  is_root || die "needs root"
  case "$dir/" in /run/* | /var/run/* | /dev/shm/* | /var/lib/pacemaker/* | /var/lib/corosync/* | /etc/corosync/* | /var/log/*)
    die "DIR must not be under a path the nodes have their own of (/run, /dev/shm, /var/lib/..., /var/log)" ;;
  esac
  local c
  for c in corosync pacemakerd crm_mon cibadmin ganesha.nfsd rpcbind nfs-ls nsenter; do
    command -v "$c" >/dev/null || die "$c missing: run scripts/pacemaker.sh install"
  done
  id hacluster >/dev/null 2>&1 || die "no hacluster user: run scripts/pacemaker.sh install"
  t="$(now)"
  stop_all "$dir" || die "could not stop what was left under $dir"
  rm -rf "$dir/ha" "$dir/nodes" "$dir/fencing.log"
  trap 'exit 143' TERM INT
  trap 'rc=$?; if [ "$rc" -ne 0 ]; then log "start failed: stopping what was started in '"$dir"' (logs: '"$dir"'/nodes/*/)"; stop_all "'"$dir"'" || true; fi' EXIT
  mkdir -p "$dir/ha/sbin" "$dir/ha/ocf/storlab" "$dir/ha/recovery"
  ln -s "$SCRIPTS/ha/fence_storlab_cgroup" "$dir/ha/sbin/fence_storlab_cgroup"
  ln -s "$SCRIPTS/ha/ganesha" "$dir/ha/ocf/storlab/ganesha"
  ln -s "$SCRIPTS/ha/members" "$dir/ha/ocf/storlab/members"
  # A handle of the host's network namespace, for scripts/ha/members' keeper (the nodes see it:
  # their mount namespaces are copies made after this).
  touch "$dir/ha/host-netns"
  mount --bind /proc/self/ns/net "$dir/ha/host-netns"
  : >"$dir/fencing.log"
  # The network.
  netns_lock
  x="$(free_octet 10.216 "no free 10.216.X.0/24 for the HA nodes' link")"
  echo "$x" >"$dir/ha/subnet"
  bridge_add "$(bridge "$dir")" "10.216.$x.1/24"
  netns_unlock
  for n in "${NODES[@]}"; do node_link "$dir" "$n"; done
  ip netns add "$(client_ns "$dir")"
  veth_to_bridge "$(client_ns "$dir")" "$(node_veth "$dir" c)" "$(bridge "$dir")" eth0 "$(client_addr "$dir")/24"
  # Configuration: Corosync's (one key for both), the CIB on both nodes' disks.
  corosync-keygen -k "$dir/ha/authkey" >/dev/null 2>&1 || die "corosync-keygen failed"
  write_corosync_conf "$dir" >"$dir/ha/corosync.conf"
  write_cib "$dir" >"$dir/ha/cib.xml"
  for n in "${NODES[@]}"; do
    node_dirs "$dir" "$n"
    install -m 644 "$dir/ha/corosync.conf" "$dir/nodes/$n/etc-corosync/corosync.conf"
    install -m 400 "$dir/ha/authkey" "$dir/nodes/$n/etc-corosync/authkey"
    install -m 600 -o hacluster -g haclient "$dir/ha/cib.xml" "$dir/nodes/$n/var-lib-pacemaker/cib/cib.xml"
  done
  local t_boot s_online
  t_boot="$(now)"
  for n in "${NODES[@]}"; do node_boot "$dir" "$n"; done
  for n in "${NODES[@]}"; do wait_for "node $n online" "$START_TIMEOUT" online "$dir" "$n"; done
  s_online="$(elapsed "$t_boot")"
  cat >"$dir/env.sh" <<EOF
# written by scripts/pacemaker.sh start $dir
export STORLAB_HA_DIR='$dir'
export STORLAB_HA_SCRIPT='$SCRIPTS/pacemaker.sh'
export STORLAB_HA_SERVER='nfs://$(service_addr "$dir")'
export STORLAB_HA_CLIENT_NETNS='$(client_ns "$dir")'
export STORLAB_HA_NODE_A_NETNS='$(node_ns "$dir" a)'
export STORLAB_HA_NODE_B_NETNS='$(node_ns "$dir" b)'
export STORLAB_HA_NODE_CACHE='$(storlab_binary)'
EOF
  trap - EXIT TERM INT
  log "both nodes online ${s_online} s after boot (all: $(elapsed "$t") s); the array's group comes with serve; source $dir/env.sh"
  echo "online_s=$s_online"
  [ -z "${2:-}" ] || cmd_serve "$dir" "${@:2}"
}

# The array's group in the running cluster: created stopped, then its location (a constraint
# must name an existing resource), then started (started before its location, it could start on
# b and stay there, sticky). Returns once it runs on a and the export answers at the service
# address.
cmd_serve() {
  local dir cache="" t n
  dir="$(resolve_dir "${1:-}")"
  shift
  if [ "${1:-}" = --node-cache ]; then
    cache="${2:-}"
    [ -x "$cache" ] || die "--node-cache needs the storlab binary (got '${cache}')"
    cache="$(cd "$(dirname "$cache")" && pwd)/$(basename "$cache")"
    shift 2
  fi
  local dev="${1:-}" mnt="${2:-}" fstype="${3:-}" opts="${4:-}"
  [ -r "$dir/ha/subnet" ] || die "nothing started under $dir: scripts/pacemaker.sh start $dir"
  [ ! -e "$dir/ha/array" ] || die "the cluster under $dir serves an array already ($(cat "$dir/ha/array"))"
  n="$(live_node "$dir")" || die "no node runs under $dir"
  online "$dir" a || die "node a is not online: the group starts there"
  # The array: a file system on a loop device unless given.
  if [ -z "$dev" ]; then
    truncate -s "${IMAGE_MB}M" "$dir/array.img"
    mkfs.ext4 -q -F "$dir/array.img"
    dev="$(losetup --find --show "$dir/array.img")"
    echo "$dev" >"$dir/ha/loop"
    mnt="$dir/mnt"
    fstype=ext4
  fi
  [ -n "$mnt" ] || die "DEVICE needs a MOUNTPOINT"
  [ -b "$dev" ] || die "$dev is not a block device"
  [ -n "$fstype" ] || fstype="$(blkid -o value -s TYPE "$dev" 2>/dev/null || true)"
  [ -n "$fstype" ] || die "no file system type for $dev"
  mkdir -p "$mnt"
  write_ganesha_conf "$dir" "$mnt" >"$dir/ha/ganesha.conf"
  write_group "$dir" "$dev" "$mnt" "$fstype" "$opts" "$cache" >"$dir/ha/group.xml"
  t="$(now)"
  in_node "$dir" "$n" cibadmin --create -o resources --xml-file "$dir/ha/group.xml" >/dev/null ||
    die "cibadmin could not add the group ($dir/ha/group.xml)"
  in_node "$dir" "$n" cibadmin --create -o constraints >/dev/null \
    --xml-text '<rsc_location id="array-prefers-a" rsc="array" node="a" score="100"/>' ||
    die "cibadmin could not add the group's location"
  in_node "$dir" "$n" crm_resource --resource array --meta --set-parameter target-role \
    --parameter-value Started >/dev/null || die "crm_resource could not start the group"
  printf '%s %s %s %s\n' "$dev" "$mnt" "$fstype" "$opts" >"$dir/ha/array"
  wait_for "the group on a" "$START_TIMEOUT" is_on "$dir" a
  local s_group s_answers
  s_group="$(elapsed "$t")"
  wait_for "the export at $(service_addr "$dir")" "$START_TIMEOUT" answers "$dir"
  s_answers="$(elapsed "$t")"
  log "group on a at ${s_group} s, export answers at ${s_answers} s: $dev ($fstype${opts:+, -o $opts}) at $mnt as nfs://$(service_addr "$dir")/export${cache:+, each node through its volatile write cache ($cache volatile-fs)}"
  echo "group_s=$s_group answers_s=$s_answers"
}

is_on() { [ "$(located "$1")" = "$2" ]; }

cmd_stop() {
  local dir
  dir="$(resolve_dir "${1:-}")"
  stop_all "$dir" || die "something under $dir did not stop"
  log "stopped the HA nodes under $dir"
}

cmd_status() {
  local dir n
  dir="$(resolve_dir "${1:-}")"
  n="$(live_node "$dir")" || die "no node runs under $dir"
  in_node "$dir" "$n" crm_mon -1 -r
}

cmd_where() {
  local dir
  dir="$(resolve_dir "${1:-}")"
  located "$dir"
}

cmd_answers() {
  local dir n="${2:-}"
  dir="$(resolve_dir "${1:-}")"
  [ -r "$dir/ha/subnet" ] || die "nothing started under $dir"
  if [ -n "$n" ]; then
    check_node "$n"
    is_on "$dir" "$n" || return 1
  fi
  answers "$dir"
}

# The node's network namespace (it exists, the node running or not: storlab's power-off event
# takes its name and kills every process in it).
cmd_netns() {
  local dir n="${2:-}" ns
  dir="$(resolve_dir "${1:-}")"
  check_node "$n"
  ns="$(node_ns "$dir" "$n")"
  ns_exists "$ns" || die "no namespace $ns: nothing started under $dir"
  echo "$ns"
}

# fenced_since DIR LINES NODE: DIR/fencing.log has a line past its first LINES that records
# NODE's fencing.
fenced_since() { tail -n +"$(($2 + 1))" "$1/fencing.log" 2>/dev/null | grep -q "fence [a-z]* $3:"; }

cmd_power_off() {
  local dir n="${3:-}" nowait="${4:-}" t lines survivor
  dir="$(resolve_dir "${2:-}")"
  check_node "$n"
  survivor="$(other "$n")"
  [ -n "$(node_pid "$dir" "$n")" ] || die "node $n is off"
  lines="$(wc -l <"$dir/fencing.log")"
  t="$(now)"
  cg_kill "$dir" "$n" 10 || die "node $n's group did not empty"
  # Its NIC goes with the power (the killed node's address, and the service address if it had
  # it, leave the link).
  ip link del "$(node_veth "$dir" "$n")" 2>/dev/null || true
  if ns_exists "$(node_ns "$dir" "$n")"; then ip netns del "$(node_ns "$dir" "$n")"; fi
  log "node $n powered off ($(elapsed "$t") s)"
  [ -z "$nowait" ] || return 0
  [ -n "$(node_pid "$dir" "$survivor")" ] || die "node $survivor is off too: nothing takes over"
  local s_fence="" s_group="" s_host="" s_client="" end=$((SECONDS + START_TIMEOUT))
  while [ "$SECONDS" -lt "$end" ]; do
    [ -n "$s_fence" ] || ! fenced_since "$dir" "$lines" "$n" || s_fence="$(elapsed "$t")"
    [ -n "$s_group" ] || ! is_on "$dir" "$survivor" || s_group="$(elapsed "$t")"
    if [ -n "$s_group" ]; then
      [ -n "$s_host" ] || ! answers "$dir" || s_host="$(elapsed "$t")"
      [ -n "$s_client" ] || ! client_answers "$dir" || s_client="$(elapsed "$t")"
    fi
    [ -z "$s_fence" ] || [ -z "$s_group" ] || [ -z "$s_host" ] || [ -z "$s_client" ] || break
    sleep 0.1
  done
  log "after power-off of $n: fenced at ${s_fence:-never} s, group on $survivor at ${s_group:-never} s, export answers from the host at ${s_host:-never} s, from the client namespace at ${s_client:-never} s"
  echo "fenced_s=${s_fence:-never} group_s=${s_group:-never} host_answers_s=${s_host:-never} client_answers_s=${s_client:-never}"
  [ -n "$s_fence" ] && [ -n "$s_group" ] && [ -n "$s_host" ] && [ -n "$s_client" ]
}

cmd_power_on() {
  local dir n="${3:-}" t
  dir="$(resolve_dir "${2:-}")"
  check_node "$n"
  [ -r "$dir/ha/subnet" ] || die "nothing started under $dir"
  [ -z "$(node_pid "$dir" "$n")" ] || die "node $n runs"
  # A node that was fenced off has nothing left; one whose processes a failed start left is
  # powered off first.
  cg_kill "$dir" "$n" 10 || die "node $n's group did not empty"
  t="$(now)"
  node_link "$dir" "$n"
  node_boot "$dir" "$n"
  # Both views: the cluster's (the other node's) and the node's own (its controller joined).
  wait_for "node $n online" "$START_TIMEOUT" online "$dir" "$n" "$(other "$n")"
  wait_for "node $n online in its own view" "$START_TIMEOUT" online "$dir" "$n" "$n"
  wait_for "node $(other "$n") online in $n's view" "$START_TIMEOUT" online "$dir" "$(other "$n")" "$n"
  log "node $n online again in $(elapsed "$t") s; the group runs on $(located "$dir")"
  echo "online_s=$(elapsed "$t")"
}

cmd_failback() {
  local dir t from
  dir="$(resolve_dir "${1:-}")"
  [ -n "$(node_pid "$dir" a)" ] || die "node a is off: power-on first"
  online "$dir" a || die "node a is not online"
  t="$(now)"
  if [ "$(located "$dir")" != a ]; then
    from="$(live_node "$dir")"
    in_node "$dir" "$from" crm_resource --move --resource array --node a >/dev/null 2>&1 ||
      die "crm_resource --move failed"
    wait_for "the group on a" "$START_TIMEOUT" is_on "$dir" a
  fi
  wait_for "the export at $(service_addr "$dir")" "$START_TIMEOUT" answers "$dir"
  local s
  s="$(elapsed "$t")"
  in_node "$dir" a crm_resource --clear --resource array >/dev/null 2>&1 || die "crm_resource --clear failed"
  log "group back on a, export answers, in $s s (move constraint cleared)"
  echo "failback_s=$s"
}

cmd_crm() {
  local dir n="${3:-}"
  dir="$(resolve_dir "${2:-}")"
  check_node "$n"
  shift 3
  in_node "$dir" "$n" "$@"
}

case "${1:-}" in
install) cmd_install ;;
start) cmd_start "${@:2}" ;;
stop) cmd_stop "${2:-}" ;;
status) cmd_status "${2:-}" ;;
where) cmd_where "${2:-}" ;;
answers) cmd_answers "${2:-}" "${3:-}" ;;
netns) cmd_netns "${2:-}" "${3:-}" ;;
serve) cmd_serve "${@:2}" ;;
power-off) cmd_power_off "$@" ;;
power-on) cmd_power_on "$@" ;;
failback) cmd_failback "${2:-}" ;;
crm) cmd_crm "$@" ;;
*) usage ;;
esac
