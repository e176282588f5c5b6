//! YCSB's core workload as a library; so far its number generators and record contents.

pub mod generators;
pub mod keys;
