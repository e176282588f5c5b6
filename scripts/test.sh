#!/usr/bin/env bash
# Sets up (scripts/setup.sh) and runs every test: unit tests, and integration tests that run
# the real binary on real targets (files, loop devices with ext4, xfs and btrfs, embedded
# RocksDB, the null target, the HTML report in headless Chromium) and on real servers:
# PostgreSQL 15, Redis 7 and FerretDB (MongoDB protocol), installed by scripts/servers.sh
# (FerretDB is built once from its Go module, a few minutes) and started on 127.0.0.1 for
# the tests only, then stopped; Samba 4.17 and NFS-Ganesha 4.3 (scripts/fileservers.sh, Ganesha
# in its own network namespace); a three-node PostgreSQL 15 / Patroni / etcd cluster
# (scripts/cluster.sh, each node in its own network namespace; tests/cluster.rs powers its
# leader off); the HCI cluster of 4 bounded nodes and 4 tenant Patroni clusters (scripts/hci.sh,
# started by tests/elastic.rs, which loses two of its nodes); a Redis 7.0 Cluster of 3 masters and 3 replicas
# (scripts/rediscluster.sh, each node in its own network namespace; tests/rediscluster.rs
# powers a master off); Pacemaker 2.1 and Corosync 3 on two nodes (scripts/pacemaker.sh, each
# node in its own namespaces and cgroup; tests/raid.rs fails the RAID study's array over and
# back); YCSB 0.17.0's jar (Maven) for the draw-for-draw comparison.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --tests
export PATH="$HOME/.cargo/bin:$PATH"
# The code's habits, kept by the tests: rustfmt's layout and no clippy warning (lints of
# the vendored smb crate are its own). Both come with a rustup toolchain's default profile.
cargo fmt --all --check
cargo clippy --locked --all-targets --features mpi -- -D warnings
# Every crate's documentation builds without a broken or private link (the developers' docs,
# private items included).
RUSTDOCFLAGS="-D warnings" cargo doc --locked --no-deps --workspace --document-private-items
./scripts/servers.sh install
./scripts/fileservers.sh install
./scripts/pacemaker.sh install
./scripts/cluster.sh install
./scripts/hci.sh install
./scripts/rediscluster.sh install
# YCSB 0.17.0's core jar, for tests/ycsb_exact.rs (draw-for-draw comparison with YCSB).
./scripts/peers.sh install-ycsb
servers="$(mktemp -d /tmp/storlab-servers.XXXXXX)"
fileservers="$(mktemp -d /tmp/storlab-fileservers.XXXXXX)"
cluster="$(mktemp -d /tmp/storlab-cluster.XXXXXX)"
rcluster="$(mktemp -d /tmp/storlab-rcluster.XXXXXX)"
trap './scripts/servers.sh stop "$servers" >/dev/null 2>&1 || true; ./scripts/fileservers.sh stop "$fileservers" >/dev/null 2>&1 || true; ./scripts/cluster.sh stop "$cluster" >/dev/null 2>&1 || true; ./scripts/rediscluster.sh stop "$rcluster" >/dev/null 2>&1 || true; rm -rf "$servers" "$fileservers" "$cluster" "$rcluster"' EXIT
./scripts/servers.sh start "$servers"
./scripts/fileservers.sh start "$fileservers"
./scripts/cluster.sh start "$cluster"
./scripts/rediscluster.sh start "$rcluster"
# shellcheck disable=SC1091
. "$servers/env.sh"
# shellcheck disable=SC1091
. "$fileservers/env.sh"
# shellcheck disable=SC1091
. "$cluster/env.sh"
# shellcheck disable=SC1091
. "$rcluster/env.sh"
# The HCI cluster's script: tests/elastic.rs starts a cluster of its own with it.
export STORLAB_HCI_SCRIPT="$PWD/scripts/hci.sh"
export STORLAB_REQUIRE_SERVERS=1
export STORLAB_REQUIRE_CHROMIUM=1
# Tests that need root (loop devices, filesystems) fail instead of skipping when not root.
export STORLAB_REQUIRE_ROOT=1
# With the `mpi` feature, as setup.sh builds it (tests/mpi.rs runs the binary under mpirun);
# in the `ci` profile: release's optimization without its link-time optimization, which at
# each of the tests' binaries' link cost more than the whole release build (Cargo.toml).
cargo test --profile ci --locked --features mpi -- --test-threads=2
