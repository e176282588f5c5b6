//! Fault layers for the stand-ins that play a brief's system on one machine. A stand-in must
//! be able to fail the way the brief's system fails; where sharing one kernel would hide a
//! failure, a layer here puts it back.
//!
//! - [`volatile_fs`]: `storlab volatile-fs`, a FUSE filesystem that serves block devices or
//!   files and holds every write in its own memory until an fsync writes it through. Run in a
//!   node's cgroup, it is that node's volatile write cache: killing the node (a power loss)
//!   loses exactly what it acknowledged and did not sync, which the host's shared page cache
//!   would otherwise keep.
//!
//! This crate uses no other layer of storlab: the command line (storlab-cli) parses the
//! arguments and calls it.

mod aligned;
pub mod volatile_fs;
