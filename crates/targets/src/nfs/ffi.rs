//! libnfs (Debian's libnfs 4.0, `libnfs.so.13`), through the handful of its C functions the
//! NFS target uses: a context per connection, URL parsing, mount, open or create, the
//! synchronous calls that prepare the test file, and the asynchronous pread/pwrite/fsync that
//! sessions keep in flight, driven by `nfs_get_fd`, `nfs_which_events` and `nfs_service`.
//! Written by hand: the `libnfs` crate wraps only the synchronous API, and `libnfs-sys` runs
//! bindgen at build time for a dozen declarations.

use std::ffi::{CStr, CString, c_char, c_int, c_void};

/// libnfs's opaque context (one TCP connection and its RPC state; not thread-safe).
#[repr(C)]
pub struct RawContext {
    _private: [u8; 0],
}

/// An open file on the server.
#[repr(C)]
pub struct RawFh {
    _private: [u8; 0],
}

#[repr(C)]
struct RawUrl {
    server: *mut c_char,
    path: *mut c_char,
    file: *mut c_char,
}

/// `struct nfs_stat_64`.
#[repr(C)]
#[derive(Default)]
struct Stat64 {
    dev: u64,
    ino: u64,
    mode: u64,
    nlink: u64,
    uid: u64,
    gid: u64,
    rdev: u64,
    size: u64,
    blksize: u64,
    blocks: u64,
    atime: u64,
    mtime: u64,
    ctime: u64,
    atime_nsec: u64,
    mtime_nsec: u64,
    ctime_nsec: u64,
    used: u64,
}

/// The callback of every asynchronous call: `err` is the byte count (or 0) on success, a
/// negative errno on failure; `data` the bytes read (owned by libnfs, valid during the call).
pub type Callback =
    unsafe extern "C" fn(err: c_int, nfs: *mut RawContext, data: *mut c_void, private: *mut c_void);

#[link(name = "nfs")]
unsafe extern "C" {
    fn nfs_init_context() -> *mut RawContext;
    fn nfs_destroy_context(nfs: *mut RawContext);
    fn nfs_get_error(nfs: *mut RawContext) -> *mut c_char;
    fn nfs_parse_url_full(nfs: *mut RawContext, url: *const c_char) -> *mut RawUrl;
    fn nfs_destroy_url(url: *mut RawUrl);
    fn nfs_mount(nfs: *mut RawContext, server: *const c_char, export: *const c_char) -> c_int;
    fn nfs_set_timeout(nfs: *mut RawContext, milliseconds: c_int);
    fn nfs_open(nfs: *mut RawContext, path: *const c_char, flags: c_int, fh: *mut *mut RawFh)
    -> c_int;
    fn nfs_creat(nfs: *mut RawContext, path: *const c_char, mode: c_int, fh: *mut *mut RawFh)
    -> c_int;
    fn nfs_close(nfs: *mut RawContext, fh: *mut RawFh) -> c_int;
    fn nfs_fstat64(nfs: *mut RawContext, fh: *mut RawFh, st: *mut Stat64) -> c_int;
    fn nfs_pwrite(
        nfs: *mut RawContext,
        fh: *mut RawFh,
        offset: u64,
        count: u64,
        buf: *const c_void,
    ) -> c_int;
    fn nfs_fsync(nfs: *mut RawContext, fh: *mut RawFh) -> c_int;
    fn nfs_pread(
        nfs: *mut RawContext,
        fh: *mut RawFh,
        offset: u64,
        count: u64,
        buf: *mut c_void,
    ) -> c_int;
    fn nfs_get_readmax(nfs: *mut RawContext) -> u64;
    fn nfs_get_writemax(nfs: *mut RawContext) -> u64;
    fn nfs_get_fd(nfs: *mut RawContext) -> c_int;
    fn nfs_which_events(nfs: *mut RawContext) -> c_int;
    fn nfs_service(nfs: *mut RawContext, revents: c_int) -> c_int;
    fn nfs_pread_async(
        nfs: *mut RawContext,
        fh: *mut RawFh,
        offset: u64,
        count: u64,
        cb: Callback,
        private: *mut c_void,
    ) -> c_int;
    fn nfs_pwrite_async(
        nfs: *mut RawContext,
        fh: *mut RawFh,
        offset: u64,
        count: u64,
        buf: *const c_void,
        cb: Callback,
        private: *mut c_void,
    ) -> c_int;
    fn nfs_fsync_async(
        nfs: *mut RawContext,
        fh: *mut RawFh,
        cb: Callback,
        private: *mut c_void,
    ) -> c_int;
}

/// A failed libnfs call: what storlab was doing, and libnfs's own message.
#[derive(Debug, thiserror::Error)]
#[error("{what}: {message}")]
pub struct NfsError {
    pub what: String,
    pub message: String,
    /// The errno libnfs returned (0 when it gave none).
    pub errno: i32,
}

/// A mounted export with the test file open: one connection, owned by one thread at a time.
pub struct Mounted {
    nfs: *mut RawContext,
    fh: *mut RawFh,
    pub server: String,
    pub export: String,
    pub file: String,
}

// SAFETY: a context is used by one thread at a time (the session's worker, or the target's
// preparation); libnfs keeps no thread-local state.
unsafe impl Send for Mounted {}

/// How [`Mounted::open`] opens the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenHow {
    /// Create the file when it does not exist.
    pub create: bool,
    /// Open it O_SYNC: libnfs then sends every WRITE as FILE_SYNC, so the server answers
    /// only once the data is on stable storage (without: UNSTABLE, durable at a COMMIT).
    pub sync: bool,
    /// How long an RPC may wait for its answer (0: forever).
    pub timeout_ms: u32,
}

impl Mounted {
    /// Connects to the URL's server, mounts its export and opens its file for reading and
    /// writing as `how` says. Returns also whether the file was created.
    pub fn open(url: &str, how: OpenHow) -> Result<(Mounted, bool), NfsError> {
        let OpenHow {
            create,
            sync,
            timeout_ms,
        } = how;
        let c_url = CString::new(url).map_err(|_| NfsError {
            what: "the url".into(),
            message: "contains a NUL byte".into(),
            errno: libc::EINVAL,
        })?;
        // SAFETY: plain constructor; null on allocation failure.
        let nfs = unsafe { nfs_init_context() };
        if nfs.is_null() {
            return Err(NfsError {
                what: "creating a libnfs context".into(),
                message: "out of memory".into(),
                errno: libc::ENOMEM,
            });
        }
        let mut m = Mounted {
            nfs,
            fh: std::ptr::null_mut(),
            server: String::new(),
            export: String::new(),
            file: String::new(),
        };
        // SAFETY: nfs is a live context and c_url a NUL-terminated string.
        let parsed = unsafe { nfs_parse_url_full(nfs, c_url.as_ptr()) };
        if parsed.is_null() {
            return Err(m.error("parsing the url", 0));
        }
        // SAFETY: parse_url_full returns server, path and file, all non-null on success.
        let (server, export, file) = unsafe {
            let u = &*parsed;
            let part = |p: *mut c_char| {
                if p.is_null() {
                    String::new()
                } else {
                    CStr::from_ptr(p).to_string_lossy().into_owned()
                }
            };
            let parts = (part(u.server), part(u.path), part(u.file));
            nfs_destroy_url(parsed);
            parts
        };
        m.server = server;
        m.export = if export.is_empty() { "/".into() } else { export };
        m.file = file;
        if timeout_ms > 0 {
            // SAFETY: a live context.
            unsafe { nfs_set_timeout(nfs, timeout_ms.min(i32::MAX as u32) as c_int) };
        }
        let server = cstring(&m.server);
        let export = cstring(&m.export);
        // SAFETY: a live context and NUL-terminated strings.
        let rc = unsafe { nfs_mount(nfs, server.as_ptr(), export.as_ptr()) };
        if rc != 0 {
            let mut e = m.error(&format!("mounting {}:{}", m.server, m.export), rc);
            if e.message.contains("nfs_service failed") {
                // libnfs's whole message when the connection is refused or drops.
                e.message = format!("no NFS server answered at {} (libnfs: {})", m.server, e.message);
            }
            return Err(e);
        }
        let file = cstring(&m.file);
        let mut fh = std::ptr::null_mut();
        let flags = libc::O_RDWR | if sync { libc::O_SYNC } else { 0 };
        // SAFETY: a live, mounted context; fh receives the handle.
        let mut rc = unsafe { nfs_open(nfs, file.as_ptr(), flags, &mut fh) };
        let mut created = false;
        if rc == -libc::ENOENT && create {
            // SAFETY: as above.
            rc = unsafe { nfs_creat(nfs, file.as_ptr(), 0o644, &mut fh) };
            created = rc == 0;
        }
        if rc != 0 {
            return Err(m.error(&format!("opening {} on {}:{}", m.file, m.server, m.export), rc));
        }
        m.fh = fh;
        Ok((m, created))
    }

    /// Sets the timeout of the context's calls (libnfs's `nfs_set_timeout`), ms.
    pub fn set_timeout(&self, timeout_ms: u32) {
        // SAFETY: a live context.
        unsafe { nfs_set_timeout(self.nfs, timeout_ms.min(i32::MAX as u32) as c_int) };
    }

    fn error(&self, what: &str, rc: c_int) -> NfsError {
        // SAFETY: a live context; the message belongs to it and is copied at once.
        let message = unsafe {
            let p = nfs_get_error(self.nfs);
            if p.is_null() {
                String::new()
            } else {
                CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        };
        let message = if message.is_empty() && rc < 0 {
            std::io::Error::from_raw_os_error(-rc).to_string()
        } else {
            message
        };
        NfsError {
            what: what.to_string(),
            message,
            errno: if rc < 0 { -rc } else { 0 },
        }
    }

    /// The open file's size in bytes.
    pub fn size_bytes(&self) -> Result<u64, NfsError> {
        let mut st = Stat64::default();
        // SAFETY: a live context and an open handle.
        let rc = unsafe { nfs_fstat64(self.nfs, self.fh, &mut st) };
        if rc != 0 {
            return Err(self.error("reading the file's size", rc));
        }
        Ok(st.size)
    }

    /// Writes `buf` at `offset` and waits for it (the layout, never a measured operation).
    pub fn write_all_at(&self, buf: &[u8], offset: u64) -> Result<(), NfsError> {
        let mut done = 0usize;
        while done < buf.len() {
            let rest = &buf[done..];
            // SAFETY: a live context, an open handle, and `rest` valid for its length.
            let rc = unsafe {
                nfs_pwrite(
                    self.nfs,
                    self.fh,
                    offset + done as u64,
                    rest.len() as u64,
                    rest.as_ptr() as *const c_void,
                )
            };
            if rc <= 0 {
                return Err(self.error(&format!("writing at offset {}", offset + done as u64), rc));
            }
            done += rc as usize;
        }
        Ok(())
    }

    /// Reads into `buf` at `offset` and waits for it (the verify pass): the bytes read.
    pub fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<usize, NfsError> {
        // SAFETY: a live context, an open handle, and `buf` writable for its length.
        let rc = unsafe {
            nfs_pread(
                self.nfs,
                self.fh,
                offset,
                buf.len() as u64,
                buf.as_mut_ptr() as *mut c_void,
            )
        };
        if rc < 0 {
            return Err(self.error(&format!("reading at offset {offset}"), rc));
        }
        Ok(rc as usize)
    }

    pub fn fsync(&self) -> Result<(), NfsError> {
        // SAFETY: a live context and an open handle.
        let rc = unsafe { nfs_fsync(self.nfs, self.fh) };
        if rc != 0 {
            return Err(self.error("committing the file", rc));
        }
        Ok(())
    }

    /// The largest read and write the server accepts in one RPC (bytes).
    pub fn max_transfer_bytes(&self) -> (u64, u64) {
        // SAFETY: a live context.
        unsafe { (nfs_get_readmax(self.nfs), nfs_get_writemax(self.nfs)) }
    }

    /// The connection's socket, and the poll events libnfs waits for now.
    #[inline]
    pub fn poll_fd(&self) -> (c_int, i16) {
        // SAFETY: a live context.
        unsafe { (nfs_get_fd(self.nfs), nfs_which_events(self.nfs) as i16) }
    }

    /// Lets libnfs read and write what `revents` allows (0: only check timeouts); runs the
    /// callbacks of finished calls. An error means the connection failed (libnfs reconnects
    /// on the next call).
    #[inline]
    pub fn service(&self, revents: i16) -> Result<(), NfsError> {
        // SAFETY: a live context.
        let rc = unsafe { nfs_service(self.nfs, revents as c_int) };
        if rc < 0 {
            return Err(self.error("servicing the connection", rc));
        }
        Ok(())
    }

    /// Queues a read of `len` bytes at `offset`; `cb` gets `private`.
    ///
    /// # Safety
    /// `private` must stay valid until `cb` has run or the context is destroyed.
    #[inline]
    pub unsafe fn pread_async(
        &self,
        offset: u64,
        len: u32,
        cb: Callback,
        private: *mut c_void,
    ) -> c_int {
        // SAFETY: a live context and handle; the caller keeps `private` valid.
        unsafe { nfs_pread_async(self.nfs, self.fh, offset, len as u64, cb, private) }
    }

    /// Queues a write of `len` bytes from `buf` at `offset`.
    ///
    /// # Safety
    /// `buf` must hold `len` bytes and, with `private`, stay valid until `cb` has run or the
    /// context is destroyed.
    #[inline]
    pub unsafe fn pwrite_async(
        &self,
        offset: u64,
        len: u32,
        buf: *const u8,
        cb: Callback,
        private: *mut c_void,
    ) -> c_int {
        // SAFETY: as the caller promises.
        unsafe {
            nfs_pwrite_async(
                self.nfs,
                self.fh,
                offset,
                len as u64,
                buf as *const c_void,
                cb,
                private,
            )
        }
    }

    /// Queues a COMMIT of the file.
    ///
    /// # Safety
    /// `private` must stay valid until `cb` has run or the context is destroyed.
    #[inline]
    pub unsafe fn fsync_async(&self, cb: Callback, private: *mut c_void) -> c_int {
        // SAFETY: as the caller promises.
        unsafe { nfs_fsync_async(self.nfs, self.fh, cb, private) }
    }
}

impl Mounted {
    /// Destroys the context without closing the file on the server (its connection is
    /// broken): every call still queued fails, its callback runs, before this returns.
    pub fn abandon(mut self) {
        self.fh = std::ptr::null_mut();
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        // SAFETY: the handle and context are ours; destroying the context fails every call
        // still queued (their callbacks run with an error before it returns).
        unsafe {
            if !self.fh.is_null() {
                nfs_close(self.nfs, self.fh);
            }
            nfs_destroy_context(self.nfs);
        }
    }
}

/// A C string of a part libnfs itself returned (never holds a NUL byte).
fn cstring(s: &str) -> CString {
    CString::new(s.replace('\0', "")).unwrap_or_default()
}
