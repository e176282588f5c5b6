# shellcheck shell=bash
# Pacemaker 2.1 and Corosync 3 cluster nodes on one machine (Debian's packages): each node runs
# Corosync and Pacemaker inside a network namespace of its own plus mount and UTS namespaces
# made for it, with its own /etc/corosync, /var/lib/pacemaker, logs, /run and /dev/shm (libqb's
# IPC), so that several nodes live side by side. Used by scripts/pacemaker.sh (the RAID brief's
# two nodes) and scripts/hci.sh (the HCI cluster's balancer). Sourced after
# scripts/tools-lib.sh.
#
#   pcmk_node_dirs D            D/{etc-corosync,var-lib-corosync,var-lib-pacemaker,log-corosync,
#                               log-pacemaker}: the node's own directories (its disk), owned as
#                               the Debian packages own theirs
#   pcmk_corosync_conf NAME TOKEN_MS NODE=ADDRESS...
#                               corosync.conf: knet, encrypted, one link; node ids 1, 2, ... in
#                               the order given; two_node when there are two
#   pcmk_nv ID NAME VALUE       a CIB nvpair line
#   pcmk_cib_tail STICKINESS    the CIB's end after its constraints: the resources' default
#                               stickiness, then the closing tags
#   pcmk_fence_primitive NODE PREFIX LOGFILE INTERVAL
#                               the fencing device fence-NODE (stonith:fence_storlab_cgroup:
#                               cgroup.kill of the cgroup v2 group PREFIX+NODE, each fencing
#                               logged in LOGFILE), monitored every INTERVAL
#   PCMK_NODE_INIT              the node's init, a `sh -c` script: run it as
#                               ip netns exec NS unshare --mount --uts --propagation private \
#                                 sh -c "$PCMK_NODE_INIT" sh D HOSTNAME SBIN OCF
#                               (D: pcmk_node_dirs' directory, bound over the system's; SBIN and
#                               OCF: directories laid over /usr/sbin (fence agents) and
#                               /usr/lib/ocf/resource.d (resource agents)). It mounts the node's
#                               own /run, /dev/shm and cgroup2, starts Corosync, waits for it,
#                               then runs pacemakerd in the foreground (its exit ends the node).
#   pcmk_online CRM_MON_XML NODE  exit 0 when crm_mon's XML shows NODE online

pcmk_node_dirs() {
  local d="$1"
  mkdir -p "$d"/{etc-corosync,var-lib-corosync,log-corosync}
  mkdir -p "$d"/var-lib-pacemaker/{cib,pengine,blackbox,cores,bundles} "$d"/log-pacemaker/bundles
  chown -R hacluster:haclient "$d/var-lib-pacemaker" "$d/log-pacemaker"
  chmod 750 "$d"/var-lib-pacemaker/{cib,pengine,blackbox,cores}
  chmod 770 "$d/log-pacemaker"
}

pcmk_corosync_conf() {
  local name="$1" token="$2" id=0 blocks=() two=0 pair
  shift 2
  for pair in "$@"; do
    id=$((id + 1))
    blocks+=("  node {
    ring0_addr: ${pair#*=}
    name: ${pair%%=*}
    nodeid: $id
  }")
  done
  [ "$id" -ne 2 ] || two=1
  cat <<EOF
# storlab: $name, $id nodes
totem {
  version: 2
  cluster_name: $name
  transport: knet
  token: $token
  join: 50
  consensus: $((token * 12 / 10))
  crypto_cipher: aes256
  crypto_hash: sha256
  interface {
    linknumber: 0
    knet_ping_interval: 200
    knet_ping_timeout: 600
  }
}
nodelist {
$(printf '%s\n' "${blocks[@]}")
}
quorum {
  provider: corosync_votequorum
  two_node: $two
}
# Corosync stays in the node's cgroup (by default it may move itself to the root group to get
# realtime priority, out of reach of the node's cgroup.kill and limits).
system {
  move_to_root_cgroup: no
}
logging {
  to_logfile: yes
  logfile: /var/log/corosync/corosync.log
  to_stderr: no
  to_syslog: no
  timestamp: on
}
EOF
}

pcmk_nv() { printf '          <nvpair id="%s" name="%s" value="%s"/>\n' "$1" "$2" "$3"; }

pcmk_cib_tail() {
  cat <<EOF
    <rsc_defaults>
      <meta_attributes id="rsc-options">
$(pcmk_nv rsc-stickiness resource-stickiness "$1")
      </meta_attributes>
    </rsc_defaults>
  </configuration>
  <status/>
</cib>
EOF
}

pcmk_fence_primitive() {
  local n="$1"
  cat <<EOF
      <primitive id="fence-$n" class="stonith" type="fence_storlab_cgroup">
        <instance_attributes id="fence-$n-ia">
$(pcmk_nv "fence-$n-hosts" pcmk_host_list "$n")
$(pcmk_nv "fence-$n-check" pcmk_host_check static-list)
$(pcmk_nv "fence-$n-prefix" cgroup_prefix "$2")
$(pcmk_nv "fence-$n-log" logfile "$3")
$(pcmk_nv "fence-$n-nodes" nodes "$n")
        </instance_attributes>
        <operations>
          <op id="fence-$n-monitor" name="monitor" interval="$4" timeout="20s"/>
        </operations>
      </primitive>
EOF
}

# shellcheck disable=SC2016,SC2034 # expanded by the node's shell; used by who sources this
PCMK_NODE_INIT='
set -eu
d="$1" n="$2" sbin="$3" ocf="$4"
hostname "$n"
mount -t tmpfs -o mode=755 storlab-run /run
mkdir -p /run/lock
mount -t tmpfs -o mode=1777 storlab-shm /dev/shm
# ip netns exec mounted a fresh /sys: the cgroup2 hierarchy again, for the fence agent.
mount -t cgroup2 storlab-cgroup2 /sys/fs/cgroup
mount --bind "$d/etc-corosync" /etc/corosync
mount --bind "$d/var-lib-corosync" /var/lib/corosync
mount --bind "$d/var-lib-pacemaker" /var/lib/pacemaker
mount --bind "$d/log-corosync" /var/log/corosync
mount --bind "$d/log-pacemaker" /var/log/pacemaker
mount -t overlay storlab-sbin -o "lowerdir=$sbin:/usr/sbin" /usr/sbin
mount -t overlay storlab-ocf -o "lowerdir=$ocf:/usr/lib/ocf/resource.d" /usr/lib/ocf/resource.d
echo "$(date "+%F %T.%3N") node $n: booting"
corosync -f &
i=0
until corosync-cfgtool -s >/dev/null 2>&1; do
  i=$((i + 1))
  [ "$i" -lt 300 ] || { echo "corosync did not start"; exit 1; }
  kill -0 $! 2>/dev/null || { echo "corosync exited"; exit 1; }
  sleep 0.1
done
echo "$(date "+%F %T.%3N") node $n: corosync up"
export PCMK_logfile=/var/log/pacemaker/pacemaker.log PCMK_logfacility=none PCMK_debug=no
pacemakerd -f &
wait
'

# The attributes of one node element: name first, online later on the same line.
pcmk_online() { grep -q "<node name=\"$2\" .*online=\"true\"" <<<"$1"; }
