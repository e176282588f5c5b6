//! fio's `ioengine` values storlab takes, and the engine of its own each runs on: io_uring,
//! psync and null as themselves; libaio and posixaio on io_uring; sync, vsync, pvsync and
//! pvsync2 on psync (each substitution said and recorded by the plan).

/// fio's ioengine, as written; [`Engine::runs_on`] says what storlab runs it on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    IoUring,
    Psync,
    Null,
    /// Run on io_uring (storlab has no libaio engine): said and recorded.
    Libaio,
    /// POSIX aio, run on io_uring: said and recorded.
    Posixaio,
    /// read/write, readv/writev, preadv/pwritev and preadv2/pwritev2: one I/O at a time, run
    /// on storlab's psync (pread/pwrite): said and recorded.
    Sync,
    Vsync,
    Pvsync,
    Pvsync2,
}

/// What storlab runs a job's I/O on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runner {
    /// The `file` target's io-uring engine.
    IoUring,
    /// The `file` target's psync engine: one I/O at a time.
    Psync,
    /// The `null` target: every operation completes at once, no file.
    Null,
}

impl Runner {
    pub fn name(self) -> &'static str {
        match self {
            Runner::IoUring => "io_uring",
            Runner::Psync => "psync",
            Runner::Null => "null",
        }
    }
}

impl Engine {
    /// fio's `ioengine` values storlab takes.
    pub const ALL: [Engine; 9] = [
        Engine::IoUring,
        Engine::Psync,
        Engine::Null,
        Engine::Libaio,
        Engine::Posixaio,
        Engine::Sync,
        Engine::Vsync,
        Engine::Pvsync,
        Engine::Pvsync2,
    ];

    pub fn fio_name(self) -> &'static str {
        match self {
            Engine::IoUring => "io_uring",
            Engine::Psync => "psync",
            Engine::Null => "null",
            Engine::Libaio => "libaio",
            Engine::Posixaio => "posixaio",
            Engine::Sync => "sync",
            Engine::Vsync => "vsync",
            Engine::Pvsync => "pvsync",
            Engine::Pvsync2 => "pvsync2",
        }
    }

    pub fn runs_on(self) -> Runner {
        match self {
            Engine::IoUring | Engine::Libaio | Engine::Posixaio => Runner::IoUring,
            Engine::Psync | Engine::Sync | Engine::Vsync | Engine::Pvsync | Engine::Pvsync2 => {
                Runner::Psync
            }
            Engine::Null => Runner::Null,
        }
    }

    /// Whether storlab runs it on an engine of another name (said and recorded).
    pub fn substituted(self) -> bool {
        self.fio_name() != self.runs_on().name()
    }
}
