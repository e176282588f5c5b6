#!/usr/bin/env bash
# Installs what storlab needs on Debian 12 (with --tests, what its tests and benchmarks need
# too), then builds storlab (the release binary; not with --tests, whose tests build their own).
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

# `setup.sh` alone installs what building storlab and running `storlab brief` need;
# `setup.sh --tests` (scripts/test.sh) also installs what the tests and the benchmarks use.
tests=0
if [ "${1:-}" = "--tests" ]; then tests=1; fi

# install_missing [--no-install-recommends] PACKAGE...: those not installed yet.
install_missing() {
  local opts=() missing=()
  if [ "$1" = "--no-install-recommends" ]; then opts+=("$1"); shift; fi
  for p in "$@"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${opts[@]}" "${missing[@]}" >/dev/null
  fi
}

# To build: a C compiler and pkg-config, librocksdb-dev (RocksDB 7.8.3, linked by the rocksdb
# target; libclang-dev generates its bindings), libnfs-dev (libnfs 4.0, linked by the nfs target), OpenMPI 4.1 (openmpi-bin:
# mpirun; libopenmpi-dev: the library the `mpi` feature links, its bindings generated with
# libclang) for distributed runs under mpirun; storlab without mpirun never needs it.
install_missing gcc g++ pkg-config librocksdb-dev libclang-dev libnfs-dev \
  openmpi-bin libopenmpi-dev

if [ "$tests" = 1 ]; then
  # For the tests and benchmarks: fio (the peer in bench/), util-linux, e2fsprogs, xfsprogs and
  # btrfs-progs (loop devices and filesystems), python3 (bench), rocksdb-tools (Debian's
  # db_bench, the peer in bench/vs-db_bench), chromium and poppler-utils (the headless browser
  # test of the HTML report and of its print to PDF: pdftotext, pdftoppm), zstd and lz4 (the
  # compressors tests/fio.rs measures fio's and storlab's compressible buffers with),
  # python3-six (fio's fio2gnuplot imports six, which Debian's fio package does not depend on;
  # tests/fio_logs.rs runs it on storlab's logs; fiologparser_hist.py there needs pandas,
  # below). The FUSE test of verified writes (tests/verify_fuse.rs) needs no package: the
  # fuser crate mounts through /dev/fuse with mount(2) itself as root.
  install_missing fio util-linux e2fsprogs xfsprogs btrfs-progs python3 rocksdb-tools chromium \
    poppler-utils zstd lz4 python3-six
  # pandas 1.5 (tests/export.rs reads `storlab results export`'s CSV with pd.read_csv), without
  # its recommends (about 90 packages more): numpy, pandas and two libraries, ~110 MB, ~25 s.
  install_missing --no-install-recommends python3-pandas
  # Prometheus 2.42 (tests/prometheus.rs starts its own `prometheus` on a loopback port with
  # its own configuration and data folder, scraping `storlab run --metrics`). Without its
  # recommends (the node exporter). Debian's package enables a system service: where this
  # installed it and systemd runs, that service is stopped and disabled, so that no system
  # Prometheus (port 9090, scraping nothing of ours) is left running.
  if ! dpkg -s prometheus >/dev/null 2>&1; then
    install_missing --no-install-recommends prometheus
    if [ -d /run/systemd/system ]; then
      $SUDO systemctl disable --now prometheus.service >/dev/null 2>&1 || true
    fi
  fi
fi

if ! command -v cargo >/dev/null 2>&1; then
  [ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: Rust (stable, with cargo) is required: install it with rustup, then run this again" >&2
  exit 1
fi

# With distributed runs (`mpirun -np N storlab run STUDY`); `storlab brief` and a plain
# `storlab run` never start MPI. The tests (--tests, from scripts/test.sh) build their own
# binary in the `ci` profile and never run this one: building it there too took 15 minutes.
if [ "$tests" -eq 0 ]; then
  cargo build --release --locked --features mpi
fi
