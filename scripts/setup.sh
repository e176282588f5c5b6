#!/usr/bin/env bash
# Installs what storlab, its tests and its benchmarks need on Debian 12, then builds storlab.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

# Debian packages: a C compiler for the bundled SQLite, fio (the peer in bench/),
# util-linux and e2fsprogs (loop devices and filesystems for the guard tests), python3 (bench).
need=(gcc pkg-config fio util-linux e2fsprogs python3 chromium)
missing=()
for p in "${need[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
  [ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: Rust (stable, with cargo) is required: install it with rustup, then run this again" >&2
  exit 1
fi

cargo build --release --locked
