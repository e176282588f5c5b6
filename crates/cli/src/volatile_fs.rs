//! `storlab volatile-fs`: the command line of the stand-ins' volatile write cache
//! (storlab-standin's `volatile_fs`): arguments, the ready file, the summary at the end.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;

#[derive(Args)]
pub(crate) struct VolatileFsArgs {
    /// Where to mount (an existing, empty directory). Needs root (mount(2) of FUSE).
    #[arg(long, value_name = "DIR")]
    mount: PathBuf,
    /// Above this many bytes held, all members together, a write writes its member through
    /// early (as a kernel writes dirty pages back past its limit): from then on those writes
    /// survive a power loss. Sizes as in study files (64MiB, 1GiB).
    #[arg(long, value_name = "SIZE", default_value = "1GiB", value_parser = parse_size)]
    dirty_limit: u64,
    /// Threads answering the kernel.
    #[arg(long, value_name = "N", default_value_t = 2)]
    threads: usize,
    /// Written (with the process id) once the mount answers, for scripts that wait for it.
    #[arg(long, value_name = "FILE")]
    ready_file: Option<PathBuf>,
    /// What to serve: NAME=PATH, PATH a block device or a file of whole 4 KiB pages, served
    /// as the file NAME of the mount.
    #[arg(required = true, value_name = "NAME=PATH")]
    members: Vec<storlab_standin::volatile_fs::MemberSpec>,
}

fn parse_size(s: &str) -> Result<u64, String> {
    storlab_model::units::parse_bytes(s)
}

/// Serves until SIGTERM/SIGINT or an unmount; prints what it did on stderr.
pub(crate) fn run(args: VolatileFsArgs) -> Result<i32> {
    let opts = storlab_standin::volatile_fs::Options {
        mount: args.mount,
        members: args.members,
        dirty_limit_bytes: args.dirty_limit,
        threads: args.threads,
    };
    let mut ready_err = None;
    let cache = storlab_standin::volatile_fs::serve(&opts, |cache| {
        let served: Vec<String> = cache
            .members
            .iter()
            .map(|m| {
                let how = if m.direct {
                    "O_DIRECT"
                } else {
                    "buffered: O_DIRECT refused"
                };
                format!(
                    "{} = {} ({} MiB, {how})",
                    m.name,
                    m.path.display(),
                    m.size_bytes >> 20
                )
            })
            .collect();
        eprintln!(
            "storlab volatile-fs: serving at {}: {}; writes held until their file's fsync",
            opts.mount.display(),
            served.join(", ")
        );
        if let Some(f) = &args.ready_file {
            ready_err = std::fs::write(f, format!("{}\n", std::process::id()))
                .with_context(|| format!("writing the ready file {}", f.display()))
                .err();
        }
    })?;
    eprintln!("storlab volatile-fs: stopped cleanly: {}", cache.summary());
    match ready_err {
        Some(e) => Err(e),
        None => Ok(0),
    }
}
