//! YCSB's core workload as a library; so far its number generators, record contents and
//! property files.

pub mod generators;
pub mod keys;
pub mod properties;
