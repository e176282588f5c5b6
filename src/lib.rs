//! storlab: storage and database benchmarking from study files.
//!
//! Data flows one way: a study file ([`study`]) is validated into a plan, the plan is run
//! ([`run`]) by workers that drive [`target`]s with operations from a [`workload`], each worker
//! recording into its own [`record`]er; the collected results go to the [`results`] store, and
//! [`report`]s read only what was stored. [`cli`] is the command line on top.

pub mod cli;
pub mod fuzzing;
pub mod model;
pub mod record;
pub mod report;
pub mod results;
pub mod run;
pub mod study;
pub mod targets;
pub mod units;
pub mod verify;
pub mod workload;
