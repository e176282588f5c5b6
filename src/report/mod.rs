//! Reports: tables for the terminal and Markdown, made from stored run summaries only (never
//! from live state), so any stored run can be shown again without re-running it.

pub mod dbbench;
pub mod markdown;
pub mod table;
pub mod ycsb;
