//! Reports: tables for the terminal and Markdown, the self-contained HTML brief with inline SVG
//! charts, CSV, IOmeter's result file, PNG charts for slides, and comparisons of stored results shown. Everything here
//! is made from stored run folders and the results store only (never from live state), read and
//! compared by [`storlab_results`], so any stored run can be shown again without re-running it.

pub mod baseline;
pub mod checkpoint;
pub mod compare;
pub mod csv;
pub mod dbbench;
pub mod detect;
pub mod events;
pub mod fio_json;
pub mod fio_logs;
pub mod fio_terse;
pub mod fio_text;
pub mod headline;
pub mod history;
pub mod html;
pub mod iometer;
pub mod latency_search;
pub mod markdown;
pub mod model;
pub mod png;
pub mod raid;
pub mod run_text;
pub mod samples;
pub mod schedule;
pub mod steady;
pub mod svg;
pub mod table;
pub mod tested;
pub mod training;
pub mod verify;
pub mod ycsb;
