//! YCSB's core workload as a library; so far its number generators.

pub mod generators;
