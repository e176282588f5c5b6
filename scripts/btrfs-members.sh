#!/usr/bin/env bash
# A Btrfs RAID 6 of eight members under one scratch directory, each member able to fail on
# command: what examples/btrfs-raid6-degraded-writes.toml runs on (the same members as
# tests/raid.rs builds). Needs root, xfsprogs, btrfs-progs and util-linux.
#
#   scripts/btrfs-members.sh start DIR     the members and the array (removes what an earlier
#                                          start left under DIR first); prints the array's
#                                          mount point, mount options and the members' loops
#   scripts/btrfs-members.sh fail DIR N    member N (0-7) fails: every I/O to it returns EIO
#   scripts/btrfs-members.sh stop DIR      unmount and detach everything start made under DIR
#                                          (also half-started), remove DIR's images; what
#                                          another mount namespace still holds (a copy of a
#                                          mount made while it existed) is detached lazily
#   scripts/btrfs-members.sh keep DIR      wait; on SIGTERM or SIGINT run `stop DIR` (in a
#                                          session of its own, so that a SIGKILL of this
#                                          process's group does not cut the teardown short)
#   scripts/btrfs-members.sh status DIR    the array's mount and the members' loops
#
# Member N: DIR/xfsN.img, a sparse 1100 MiB XFS image attached to a loop device with direct
# I/O and mounted at DIR/xfsN; on it DIR/xfsN/member.img, a sparse 1 GiB image attached to a
# loop device with direct I/O: the member. The array: mkfs.btrfs -d raid6 -m raid1c3 over the
# eight members, mounted at DIR/array with the default options. A member fails by
# `xfs_io -x -c shutdown DIR/xfsN`: the XFS holding its image is shut down and every read and
# write of the member's loop device returns EIO (a drive that stopped answering).
# `stop` touches only loop devices whose backing file is one of DIR's images and mounts at
# DIR/array and DIR/xfsN: never another loop device or mount.
set -euo pipefail

MEMBERS=8
XFS_SIZE=1100M
MEMBER_SIZE=1G

usage() {
  sed -n '6,17p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

need_dir() {
  [ -n "${1:-}" ] || usage
  mkdir -p "$1"
  cd "$1" && pwd -P
}

mounted() { findmnt -n --mountpoint "$1" >/dev/null 2>&1; }

# The loop devices attached to FILE, by the path the kernel gives their backing file (no stat
# of FILE: on a shut-down XFS that fails with EIO).
loops_of() {
  local f
  for f in /sys/block/loop*/loop/backing_file; do
    [ "$(cat "$f" 2>/dev/null)" = "$1" ] || continue
    f="${f%/loop/backing_file}"
    echo "/dev/${f##*/}"
  done
}

# umount MOUNTPOINT, retried for up to 10 s (a loop detached a moment ago lets go of its image
# asynchronously, and the filesystem holding it is busy until it has); then detached lazily:
# a mount namespace made while the mount existed (another program's container or cluster
# node) holds a copy of it, and the filesystem stays busy until that namespace lets go.
unmount() {
  for _ in $(seq 50); do
    mounted "$1" || return 0
    umount "$1" 2>/dev/null || sleep 0.2
  done
  mounted "$1" || return 0
  umount -l "$1" || return 1
  echo "btrfs-members: $1 is still in use (a copy of the mount in another mount namespace?): detached lazily, the kernel unmounts it when the last user lets go" >&2
}

# Detaches every loop device attached to FILE. A loop still open (udev probing it after a
# change, a filesystem letting go of it, a copy of a mount in another mount namespace) is only
# marked to detach (autoclear) and goes when the last user lets go: waited for up to 5 s, then
# left to the kernel. Each try looks the loops up by FILE again, so a loop number reused by
# someone else is never touched.
detach() {
  local l left=""
  for _ in $(seq 25); do
    [ -n "$(loops_of "$1")" ] || return 0
    for l in $(loops_of "$1"); do
      losetup -d "$l" 2>/dev/null || true
    done
    udevadm settle 2>/dev/null || true
    [ -n "$(loops_of "$1")" ] || return 0
    sleep 0.2
  done
  for l in $(loops_of "$1"); do
    if [ "$(cat "/sys/block/${l#/dev/}/loop/autoclear" 2>/dev/null)" = 1 ]; then
      echo "btrfs-members: $l ($1) is still open elsewhere: marked to detach, the kernel detaches it when the last user lets go" >&2
    else
      left="$left $l"
    fi
  done
  [ -z "$left" ] && return 0
  echo "btrfs-members: $1 is still attached to$left" >&2
  return 1
}

cmd_stop() {
  local dir n l failed=0
  dir="$(need_dir "${1:-}")"
  if mounted "$dir/array"; then
    unmount "$dir/array" || failed=1
  fi
  for n in $(seq 0 $((MEMBERS - 1))); do
    for l in $(loops_of "$dir/xfs$n/member.img"); do
      # The kernel's Btrfs keeps a list of the devices it has seen: forget this one.
      btrfs device scan --forget "$l" 2>/dev/null || true
    done
    detach "$dir/xfs$n/member.img" || failed=1
  done
  for n in $(seq 0 $((MEMBERS - 1))); do
    if mounted "$dir/xfs$n"; then
      unmount "$dir/xfs$n" || failed=1
    fi
    detach "$dir/xfs$n.img" || failed=1
  done
  if [ "$failed" = 0 ]; then
    for n in $(seq 0 $((MEMBERS - 1))); do
      rm -f "$dir/xfs$n.img"
      if [ -d "$dir/xfs$n" ]; then rmdir "$dir/xfs$n"; fi
    done
    if [ -d "$dir/array" ]; then rmdir "$dir/array"; fi
    rmdir "$dir" 2>/dev/null || true
  else
    echo "btrfs-members: could not stop everything under $dir (see above)" >&2
  fi
  return "$failed"
}

cmd_start() {
  local dir n outer member loops=()
  dir="$(need_dir "${1:-}")"
  cmd_stop "$dir"
  mkdir -p "$dir"
  for n in $(seq 0 $((MEMBERS - 1))); do
    mkdir -p "$dir/xfs$n"
    truncate -s "$XFS_SIZE" "$dir/xfs$n.img"
    mkfs.xfs -q -f "$dir/xfs$n.img"
    outer="$(losetup --direct-io=on -f --show "$dir/xfs$n.img")"
    mount -t xfs "$outer" "$dir/xfs$n"
    member="$dir/xfs$n/member.img"
    truncate -s "$MEMBER_SIZE" "$member"
    loops+=("$(losetup --direct-io=on -f --show "$member")")
  done
  mkfs.btrfs -f -q -d raid6 -m raid1c3 "${loops[@]}"
  local devices
  devices="$(printf 'device=%s,' "${loops[@]}")"
  mkdir -p "$dir/array"
  mount -t btrfs -o "${devices%,}" "${loops[0]}" "$dir/array"
  echo "array: $dir/array ($(findmnt -n -o OPTIONS --mountpoint "$dir/array"))"
  for n in $(seq 0 $((MEMBERS - 1))); do
    echo "member $n: ${loops[$n]} on $dir/xfs$n/member.img"
  done
}

cmd_fail() {
  local dir n
  dir="$(need_dir "${1:-}")"
  n="${2:-}"
  case "$n" in
  [0-7]) ;;
  *) usage ;;
  esac
  mounted "$dir/xfs$n" || {
    echo "btrfs-members: member $n is not there ($dir/xfs$n is not mounted)" >&2
    exit 1
  }
  xfs_io -x -c shutdown "$dir/xfs$n"
  echo "member $n failed at $(date +%s.%N): $dir/xfs$n shut down"
}

cmd_keep() {
  local dir
  dir="$(need_dir "${1:-}")"
  # `exit` in the traps runs the EXIT trap: the teardown in a session of its own.
  trap 'setsid -w "$0" stop "$dir"' EXIT
  trap 'exit 143' TERM
  trap 'exit 130' INT
  sleep infinity &
  wait $!
}

cmd_status() {
  local dir n
  dir="$(need_dir "${1:-}")"
  findmnt -n --mountpoint "$dir/array" || echo "array: not mounted"
  for n in $(seq 0 $((MEMBERS - 1))); do
    echo "member $n: $(loops_of "$dir/xfs$n/member.img" | tr '\n' ' ')"
  done
}

case "${1:-}" in
start) cmd_start "${2:-}" ;;
fail) cmd_fail "${2:-}" "${3:-}" ;;
stop) cmd_stop "${2:-}" ;;
keep) cmd_keep "${2:-}" ;;
status) cmd_status "${2:-}" ;;
*) usage ;;
esac
