# shellcheck shell=bash
# etcd and Patroni for the replicated PostgreSQL clusters that scripts/cluster.sh (one
# three-node cluster) and scripts/hci.sh (a Patroni cluster per tenant over bounded nodes)
# start. Sourced after scripts/tools-lib.sh and scripts/netns-lib.sh (log, die, fail_server,
# alive, pidfile_pid, ns_spawn); every name, address and path is the caller's.
#
#   etcd_start ROOT NS IP           a one-member etcd in namespace NS answering on IP:2379,
#                                   its data, pid and log under ROOT; waits until it is healthy
#   patroni_conf FILE KEY=VALUE...  a member's patroni.yml (keys below)
#   patroni_secrets DIR USER DB     fresh superuser, replication and storlab passwords in
#                                   DIR/NAME-password (mode 600), and DIR/post-bootstrap.sh,
#                                   which creates role USER (the storlab password) and its
#                                   database DB
#
# Timings (the issue's measured ones, for every cluster): ttl 10, loop_wait 2, retry_timeout
# 4, synchronous_mode; a replica's copy starts at once (checkpoint: fast; the default spread
# checkpoint took 95 s on a new cluster).

etcd_start() {
  local root="$1" ns="$2" ip="$3" i
  mkdir -p "$root"
  echo "$ns" >"$root/netns"
  # The peer URL is the namespace's own loopback: a one-member cluster.
  ns_spawn "$ns" "$root/etcd.pid" "$root/etcd.log" root etcd --name dcs --data-dir "$root/data" \
    --listen-client-urls "http://$ip:2379" --advertise-client-urls "http://$ip:2379" \
    --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster dcs=http://127.0.0.1:2380 --initial-cluster-state new
  for ((i = 0; i < 300; i++)); do
    if ip netns exec "$ns" env ETCDCTL_API=3 etcdctl --endpoints "http://$ip:2379" --dial-timeout=1s endpoint health >/dev/null 2>&1; then
      return 0
    fi
    if [ "$i" -gt 20 ] && ! alive "$(pidfile_pid "$root/etcd.pid")"; then
      fail_server etcd "$root/etcd.log" "exited before answering on $ip:2379"
    fi
    sleep 0.1
  done
  fail_server etcd "$root/etcd.log" "did not answer on $ip:2379 within 30 s"
}

patroni_secrets() {
  local dir="$1" pw
  for pw in superuser replication storlab; do
    od -An -N12 -tx1 /dev/urandom | tr -d ' \n' >"$dir/$pw-password"
    chmod 600 "$dir/$pw-password"
  done
  # Patroni runs this once, on the member that bootstraps, with a superuser connection URL.
  cat >"$dir/post-bootstrap.sh" <<EOF
#!/bin/sh
exec psql -X -q "\$1" -v ON_ERROR_STOP=1 -c "CREATE ROLE $2 LOGIN PASSWORD '$(cat "$dir/storlab-password")'" -c "CREATE DATABASE $3 OWNER $2"
EOF
  chown postgres:postgres "$dir/post-bootstrap.sh"
  chmod 700 "$dir/post-bootstrap.sh"
}

# patroni_conf FILE scope=S name=N ip=IP rest=PORT pg=PORT data=DIR run=DIR pglog=DIR
#   dcs=IP subnet=X secrets=DIR post=SCRIPT [shared-buffers=64MB] [note=TEXT]
# data: the data directory; run: the unix socket directory (mode 700); secrets: where
# patroni_secrets wrote; subnet: X of 10.214.X.0/24, the clients and members allowed in.
patroni_conf() {
  local file="$1" kv
  local -A c=([shared-buffers]=64MB [note]="")
  shift
  for kv in "$@"; do c["${kv%%=*}"]="${kv#*=}"; done
  cat >"$file" <<EOC
# storlab: ${c[note]}
scope: ${c[scope]}
namespace: /storlab/
name: ${c[name]}
log:
  level: INFO
restapi:
  listen: ${c[ip]}:${c[rest]}
  connect_address: ${c[ip]}:${c[rest]}
etcd3:
  host: ${c[dcs]}:2379
bootstrap:
  dcs:
    ttl: 10
    loop_wait: 2
    retry_timeout: 4
    maximum_lag_on_failover: 1048576
    synchronous_mode: true
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        wal_level: replica
        hot_standby: "on"
        max_wal_senders: 10
        max_replication_slots: 10
        wal_log_hints: "on"
  initdb:
    - encoding: UTF8
    - locale: C
  pg_hba:
    - local all all trust
    - host replication replicator 10.214.${c[subnet]}.0/24 scram-sha-256
    - host all all 10.214.${c[subnet]}.0/24 scram-sha-256
  post_bootstrap: ${c[post]}
postgresql:
  listen: ${c[ip]}:${c[pg]}
  connect_address: ${c[ip]}:${c[pg]}
  use_unix_socket: true
  data_dir: ${c[data]}
  bin_dir: $PG_BIN
  pgpass: ${c[run]}/../pgpass
  basebackup:
    - checkpoint: fast
  authentication:
    superuser:
      username: postgres
      password: $(cat "${c[secrets]}/superuser-password")
    replication:
      username: replicator
      password: $(cat "${c[secrets]}/replication-password")
  parameters:
    unix_socket_directories: ${c[run]}
    unix_socket_permissions: "0700"
    password_encryption: scram-sha-256
    logging_collector: "on"
    log_directory: ${c[pglog]}
    shared_buffers: ${c[shared-buffers]}
    max_connections: 100
EOC
}
