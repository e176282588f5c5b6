//! The file target's option kinds: how a file is laid out, synchronous writes, when the
//! io-uring engine submits, and which pages hold the I/O buffers.

use serde::{Deserialize, Serialize};

/// How a new or short file is laid out before the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layout {
    /// Incompressible data written to every byte.
    #[default]
    Write,
    /// posix_fallocate: blocks allocated, never written.
    Fallocate,
    /// ftruncate: a sparse file of its size.
    Truncate,
    /// fallocate with FALLOC_FL_KEEP_SIZE: blocks allocated, the file's size left as it is
    /// (writes extend it).
    Keep,
    /// Created empty, nothing allocated (writes extend it).
    None,
}

/// When the io-uring engine hands queued operations to the kernel (fio's
/// `iodepth_batch_submit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Submit {
    /// One `io_uring_enter` per operation, as its slot is refilled (fio's default,
    /// `iodepth_batch_submit=1`); the default with `direct`.
    Each,
    /// What is queued goes in one `io_uring_enter` when the worker reaps (fio's
    /// `iodepth_batch_submit=iodepth`): the block layer takes the batch under one plug; the
    /// default without `direct`.
    Batch,
}

/// Synchronous writes (O_SYNC, O_DSYNC).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OpenSync {
    Sync,
    Dsync,
}

/// Which pages hold a session's I/O buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BufferPages {
    /// Transparent huge pages (MADV_HUGEPAGE) when a block is larger than a page: each block
    /// is physically contiguous, one segment per request. A virtio disk without indirect
    /// descriptors has 256 descriptors: 128 KiB blocks in 4 KiB pages take 34 each, so the
    /// driver holds 7 requests; in huge pages 3 each.
    #[default]
    Huge,
    /// 4 KiB pages, as malloc gives them (fio's default `iomem=malloc`).
    Base,
}
