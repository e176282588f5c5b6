# shellcheck shell=bash
# scripts/hci.sh's Pacemaker balancer (`hci.sh balancer DIR pacemaker`), sourced by hci.sh after
# its libraries: real Pacemaker 2.1 and Corosync 3 (Debian's packages, scripts/pcmk-lib.sh) in
# every live node, in the node's network namespace and cgroup (a child group `pcmk`: its CPU and
# memory count against the node's limits), with mount and UTS namespaces of its own. Each
# tenant's primary is a resource (scripts/hci/tenant: running where the tenant's Patroni leader
# is; starting it elsewhere asks the placement daemon to move the primary there), with the
# tenant's CPU demand as its utilization and priority; each node's utilization capacity is
# PCMK_FULL_PCT of its CPU limit, and its room left (capacity minus its primaries' demand, the
# node attribute free-cpu) is each tenant's score there; placement-strategy=balanced. The
# placement daemon keeps these current (scripts/hci/placement.py). Pacemaker moves a tenant
# when its node can no longer hold its tenants' demand (over PCMK_FULL_PCT), to the node with
# the most room; stickiness (1000, above any room) keeps every tenant where it is otherwise. Resources start unmanaged (Pacemaker only probes
# where each tenant's primary is) and become managed when the balancer's delay has passed
# (the daemon sets is-managed).
# Fencing: stonith:fence_storlab_cgroup per node (cgroup.kill of the node's group, logged in
# DIR/fencing.log); the placement daemon treats a fenced node as powered off.
# Layout: DIR/pcmk/{corosync.conf,authkey,cib.xml,sbin,ocf,full-pct}, DIR/pcmk/NODE/ (the node's
# /etc/corosync, /var/lib/pacemaker, logs; pid: its init; console.log).

PCMK_TOKEN_MS="${STORLAB_HCI_PCMK_TOKEN_MS:-3000}" # Corosync's token: the nodes are CPU-bound
PCMK_FULL_PCT=80                                  # a node is full at this share of its CPU limit

# pcmk_pid DIR NODE: the node's Pacemaker init, "" when it does not run.
pcmk_pid() {
  local p
  p="$(pidfile_pid "$1/pcmk/$2/pid")"
  [ -z "$p" ] || ! alive "$p" || echo "$p"
}

# pcmk_node DIR: a node whose Pacemaker runs (exit 1 if none).
pcmk_node() {
  local node
  while read -r node; do
    [ -z "$(pcmk_pid "$1" "$node")" ] || {
      echo "$node"
      return 0
    }
  done < <(nodes_of "$1")
  return 1
}

# cmd_pcmk DIR CMD...: CMD (crm_mon, crm_resource, cibadmin...) in a live node's namespaces.
cmd_pcmk() {
  local dir="$1" node
  shift
  node="$(pcmk_node "$dir")" || die "Pacemaker does not run (hci.sh balancer DIR pacemaker starts it)"
  nsenter --target "$(pcmk_pid "$dir" "$node")" --net --mount --uts "$@"
}

pcmk_cib() {
  local dir="$1" t node
  cat <<EOF
<cib crm_feature_set="3.16.1" validate-with="pacemaker-3.9" epoch="1" num_updates="0" admin_epoch="0">
  <configuration>
    <crm_config>
      <cluster_property_set id="cib-bootstrap-options">
$(pcmk_nv o-cluster-name cluster-name "storlab-hci-$(dir_hash "$dir")")
$(pcmk_nv o-stonith-enabled stonith-enabled true)
$(pcmk_nv o-stonith-action stonith-action off)
$(pcmk_nv o-stonith-timeout stonith-timeout 30s)
$(pcmk_nv o-dc-deadtime dc-deadtime 5s)
$(pcmk_nv o-no-quorum-policy no-quorum-policy freeze)
$(pcmk_nv o-placement-strategy placement-strategy balanced)
$(pcmk_nv o-recheck cluster-recheck-interval 1min)
      </cluster_property_set>
    </crm_config>
    <nodes/>
    <resources>
EOF
  while read -r node; do
    pcmk_fence_primitive "$node" "storlab-hci-$(dir_hash "$dir")/" "$dir/fencing.log" 60s
  done < <(nodes_of "$dir")
  for ((t = 1; t <= $(cat "$dir/tenants"); t++)); do
    cat <<EOF
      <primitive id="t$t" class="ocf" provider="storlab" type="tenant">
        <instance_attributes id="t$t-ia">
$(pcmk_nv "t$t-dir" hci_dir "$dir")
$(pcmk_nv "t$t-tenant" tenant "t$t")
        </instance_attributes>
        <meta_attributes id="t$t-meta">
$(pcmk_nv "t$t-failure-timeout" failure-timeout 120s)
$(pcmk_nv "t$t-is-managed" is-managed false)
        </meta_attributes>
        <utilization id="t$t-utilization">
$(pcmk_nv "t$t-utilization-cpu" cpu 1)
        </utilization>
        <operations>
          <op id="t$t-monitor" name="monitor" interval="10s" timeout="20s"/>
          <op id="t$t-start" name="start" interval="0" timeout="900s"/>
          <op id="t$t-stop" name="stop" interval="0" timeout="30s"/>
        </operations>
      </primitive>
EOF
  done
  echo "    </resources>"
  echo "    <constraints>"
  while read -r node; do
    echo "      <rsc_location id=\"fence-$node-not-on-$node\" rsc=\"fence-$node\" node=\"$node\" score=\"-INFINITY\"/>"
  done < <(nodes_of "$dir")
  # Each node scores its room left (the node attribute free-cpu, kept by the daemon): a tenant
  # that no longer fits where it runs goes to the node with the most room as measured, not to
  # the first of the nodes Pacemaker has not yet placed anything on in this pass.
  for ((t = 1; t <= $(cat "$dir/tenants"); t++)); do
    cat <<EOF
      <rsc_location id="t$t-room" rsc="t$t">
        <rule id="t$t-room-rule" score-attribute="free-cpu">
          <expression id="t$t-room-expr" attribute="free-cpu" operation="defined"/>
        </rule>
      </rsc_location>
EOF
  done
  echo "    </constraints>"
  pcmk_cib_tail 1000
}

# pcmk_boot DIR NODE: the node's Corosync and Pacemaker, in its cgroup (child `pcmk`) from the
# first process on, in its network namespace and mount and UTS namespaces of their own.
pcmk_boot() {
  local dir="$1" node="$2" d
  d="$dir/pcmk/$node"
  pcmk_node_dirs "$d"
  install -m 644 "$dir/pcmk/corosync.conf" "$d/etc-corosync/corosync.conf"
  install -m 400 "$dir/pcmk/authkey" "$d/etc-corosync/authkey"
  install -m 600 -o hacluster -g haclient "$dir/pcmk/cib.xml" "$d/var-lib-pacemaker/cib/cib.xml"
  (
    cg_join "$(group_of "$dir" "$node")" pcmk "$BASHPID"
    echo "$BASHPID" >"$d/pid"
    exec setsid ip netns exec "$(ns_of "$dir" "$node")" unshare --mount --uts --propagation private \
      sh -c "$PCMK_NODE_INIT" sh "$d" "$node" "$dir/pcmk/sbin" "$dir/pcmk/ocf"
  ) </dev/null >>"$d/console.log" 2>&1 &
}

# pcmk_ready DIR NODES...: every node online, and every tenant located by the probes.
pcmk_ready() {
  local dir="$1" out node t
  shift
  out="$(cmd_pcmk "$dir" crm_mon -1 --output-as=xml 2>/dev/null)" || return 1
  for node in "$@"; do pcmk_online "$out" "$node" || return 1; done
  for ((t = 1; t <= $(cat "$dir/tenants"); t++)); do
    grep -q "<resource id=\"t$t\" .*nodes_running_on=\"1\"" <<<"$out" || return 1
  done
}

# pcmk_up DIR: Pacemaker in every live node (unless it runs), resources unmanaged; returns once
# every node is online and every tenant's primary is located. Prints the seconds it took.
pcmk_up() {
  local dir="$1" t0 node live=() pairs=() i
  [ -z "$(pcmk_node "$dir" || true)" ] || return 0
  for c in corosync pacemakerd crm_mon cibadmin nsenter; do
    command -v "$c" >/dev/null || die "$c missing: run scripts/hci.sh install"
  done
  t0="$(now)"
  rm -rf "$dir/pcmk"
  mkdir -p "$dir/pcmk/sbin" "$dir/pcmk/ocf/storlab"
  ln -s "$SCRIPTS/ha/fence_storlab_cgroup" "$dir/pcmk/sbin/fence_storlab_cgroup"
  ln -s "$SCRIPTS/hci/tenant" "$dir/pcmk/ocf/storlab/tenant"
  touch "$dir/fencing.log"
  while read -r node; do
    [ -e "$dir/$node/off" ] && continue
    live+=("$node")
    pairs+=("$node=$(node_ip "$dir" "$node")")
  done < <(nodes_of "$dir")
  corosync-keygen -k "$dir/pcmk/authkey" >/dev/null 2>&1 || die "corosync-keygen failed"
  pcmk_corosync_conf "storlab-hci-$(dir_hash "$dir")" "$PCMK_TOKEN_MS" "${pairs[@]}" >"$dir/pcmk/corosync.conf"
  pcmk_cib "$dir" >"$dir/pcmk/cib.xml"
  echo "$PCMK_FULL_PCT" >"$dir/pcmk/full-pct" # read by the placement daemon
  for node in "${live[@]}"; do pcmk_boot "$dir" "$node"; done
  for ((i = 0; i < START_TIMEOUT * 2; i++)); do
    if pcmk_ready "$dir" "${live[@]}"; then
      log "Pacemaker up in ${live[*]} in $(elapsed "$t0") s, every tenant's primary located"
      return 0
    fi
    sleep 0.5
  done
  die "Pacemaker: not every node online with every tenant located within ${START_TIMEOUT}s (logs: $dir/pcmk/*/)"
}

# pcmk_down DIR: every node's Pacemaker and Corosync killed at once (the tenants' agent does
# nothing on stop: nothing of the tenants depends on them); their logs stay in DIR/pcmk.
pcmk_down() {
  local dir="$1" node g rc=0
  [ -d "$dir/pcmk" ] || return 0
  while read -r node; do
    g="$(group_of "$dir" "$node")/pcmk"
    [ -d "$(cg_dirs "$g" | head -n1)" ] || continue
    cg_kill "$g" 5 || rc=1
    cg_remove "$g" 2>/dev/null || true
    rm -f "$dir/pcmk/$node/pid"
  done < <(nodes_of "$dir")
  rm -f "$dir/pcmk/full-pct" # the daemon's sign that Pacemaker runs
  # Pacemaker's moves not yet made are withdrawn with it (a request by hand stays).
  grep -lx '[a-z0-9]* pacemaker' "$dir"/requests/t* 2>/dev/null | xargs -r rm -f
  return "$rc"
}
