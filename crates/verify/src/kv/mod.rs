//! Verified key-value writes (`verify = true` on a `ycsb` workload): every field value an
//! insert, update or read-modify-write sets carries a [`header`] stamp (magic, key number,
//! generation, crc32c of key, field name and value) over YCSB's deterministic value; storlab
//! keeps each key's acknowledged writes in a preallocated [`table`] (24 bytes per key, no
//! allocation or lock per operation), and after the run a pass (the engine's `verify::kv_pass`) reads every key with an
//! acknowledged write back through the target and classifies it (intact, lost, missing,
//! corrupt, unreadable) into a [`report`]. The table can be saved and checked later
//! (the engine's `verify::kv_state`).
//!
//! Sessions stamp through their `RecordBuf` (`storlab_workload::ycsb`), which holds a
//! [`KvStamper`]: `YcsbStore::run` (`storlab_targets`) starts and ends the
//! writes a binding runs on the spot, and bindings that batch inserts (a Redis pipeline, a
//! MongoDB insertMany) do it per slot.

pub mod header;
pub mod readback;
pub mod report;
pub mod table;

pub use readback::{Observation, ReadBack};
pub use report::{KvClass, KvVerifyReport};
pub use table::{KvStamper, KvTable, WriteOutcome};
