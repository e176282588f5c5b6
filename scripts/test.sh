#!/usr/bin/env bash
# Sets up (scripts/setup.sh) and runs every test: unit tests, and integration tests that run
# the real binary on real targets (files, a loop device with ext4, the null target).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
export PATH="$HOME/.cargo/bin:$PATH"
export STORLAB_REQUIRE_CHROMIUM=1
cargo test --release --locked -- --test-threads=2
