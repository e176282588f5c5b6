//! fio's `ioengine` values storlab takes, and the engine of its own each runs on: io_uring,
//! psync and null as themselves; libaio and posixaio on io_uring; sync, vsync, pvsync and
//! pvsync2 on psync (each substitution said and recorded by the plan); fio's file engines
//! (filecreate, filestat, filedelete, ftruncate, falloc) on the `fileops` target.

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
    /// fio's file engines: one file operation per I/O, run on the `fileops` target.
    Filecreate,
    Filestat,
    Filedelete,
    Ftruncate,
    Falloc,
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
    /// The `fileops` target, for fio's file engine of that name.
    FileOps(FileEngine),
}

/// fio's file engines: what one I/O is (see the `fileops` target).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileEngine {
    /// Creates the next file of the job's set (open with O_CREAT, then close).
    Filecreate,
    /// stat(2) of the next file of the set.
    Filestat,
    /// unlink(2) of the next file of the set.
    Filedelete,
    /// ftruncate(2) of the job's file to each write's offset.
    Ftruncate,
    /// fallocate(2) of each I/O's range (a trim punches a hole).
    Falloc,
}

impl FileEngine {
    /// Each I/O takes the next file of the job's set (not an offset in one file).
    pub fn on_set(self) -> bool {
        matches!(
            self,
            FileEngine::Filecreate | FileEngine::Filestat | FileEngine::Filedelete
        )
    }
}

impl Runner {
    pub fn name(self) -> &'static str {
        match self {
            Runner::IoUring => "io_uring",
            Runner::Psync => "psync",
            Runner::Null => "null",
            Runner::FileOps(e) => Engine::from(e).fio_name(),
        }
    }

    /// One I/O at a time per job (fio's sync engines): iodepth is 1.
    pub fn one_at_a_time(self) -> bool {
        matches!(self, Runner::Psync | Runner::FileOps(_))
    }
}

impl From<FileEngine> for Engine {
    fn from(e: FileEngine) -> Engine {
        match e {
            FileEngine::Filecreate => Engine::Filecreate,
            FileEngine::Filestat => Engine::Filestat,
            FileEngine::Filedelete => Engine::Filedelete,
            FileEngine::Ftruncate => Engine::Ftruncate,
            FileEngine::Falloc => Engine::Falloc,
        }
    }
}

impl Engine {
    /// fio's `ioengine` values storlab takes.
    pub const ALL: [Engine; 14] = [
        Engine::IoUring,
        Engine::Psync,
        Engine::Null,
        Engine::Libaio,
        Engine::Posixaio,
        Engine::Sync,
        Engine::Vsync,
        Engine::Pvsync,
        Engine::Pvsync2,
        Engine::Filecreate,
        Engine::Filestat,
        Engine::Filedelete,
        Engine::Ftruncate,
        Engine::Falloc,
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
            Engine::Filecreate => "filecreate",
            Engine::Filestat => "filestat",
            Engine::Filedelete => "filedelete",
            Engine::Ftruncate => "ftruncate",
            Engine::Falloc => "falloc",
        }
    }

    pub fn runs_on(self) -> Runner {
        match self {
            Engine::IoUring | Engine::Libaio | Engine::Posixaio => Runner::IoUring,
            Engine::Psync | Engine::Sync | Engine::Vsync | Engine::Pvsync | Engine::Pvsync2 => {
                Runner::Psync
            }
            Engine::Null => Runner::Null,
            Engine::Filecreate => Runner::FileOps(FileEngine::Filecreate),
            Engine::Filestat => Runner::FileOps(FileEngine::Filestat),
            Engine::Filedelete => Runner::FileOps(FileEngine::Filedelete),
            Engine::Ftruncate => Runner::FileOps(FileEngine::Ftruncate),
            Engine::Falloc => Runner::FileOps(FileEngine::Falloc),
        }
    }

    /// Whether storlab runs it on an engine of another name (said and recorded).
    pub fn substituted(self) -> bool {
        self.fio_name() != self.runs_on().name()
    }
}
