//! The HTTP servers storlab runs (`storlab serve`, `--metrics`), over TLS when given a
//! certificate and its key (`--tls-cert`/`--tls-key`, `--metrics-tls-cert`/`--metrics-tls-key`).
//!
//! tiny_http's own TLS is built on rustls 0.20, which is no longer maintained and spins on a
//! close_notify sent during the handshake (RUSTSEC-2024-0336): a stranger could hold a thread.
//! So with TLS, tiny_http listens on a loopback port of its own and a front on the address the
//! user gave ends TLS with the workspace's rustls (ring's cryptography, TLS 1.2 and 1.3) and
//! relays each connection's bytes to it, one thread per connection as tiny_http does. The
//! loopback port is open to this machine's users, as any loopback address is (see
//! [`crate::access`]); the token, when one is given, is asked for there too.

use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// How long each read of a TLS handshake may wait for the client.
const HANDSHAKE_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a write may wait for a client (or the server behind) to take bytes.
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);
/// A relayed connection with no byte either way for this long is closed.
const IDLE_TIMEOUT_MS: i32 = 120_000;

#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("{flag} {path}: {message}")]
    File {
        flag: &'static str,
        path: PathBuf,
        message: String,
    },
    #[error("{cert_flag} {cert} with {key_flag} {key}: {message}")]
    Identity {
        cert_flag: &'static str,
        cert: PathBuf,
        key_flag: &'static str,
        key: PathBuf,
        message: String,
    },
    #[error("listening on {addr}: {message}")]
    Bind { addr: SocketAddr, message: String },
    #[error("starting the TLS front's thread: {0}")]
    Thread(io::Error),
}

/// A server's certificate chain and private key, read from PEM files, as a TLS
/// configuration.
#[derive(Clone)]
pub struct TlsIdentity {
    config: Arc<rustls::ServerConfig>,
}

impl std::fmt::Debug for TlsIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TlsIdentity(***)")
    }
}

/// Where a certificate and its key come from: the files and the options that named them (for
/// errors).
pub struct IdentityFiles<'a> {
    pub cert: &'a Path,
    pub cert_flag: &'static str,
    pub key: &'a Path,
    pub key_flag: &'static str,
}

impl TlsIdentity {
    /// The chain in `files.cert` (the server's certificate first, then any intermediates) and
    /// the key (PKCS#8, PKCS#1 or SEC1) in `files.key`, checked to belong together.
    pub fn read(files: &IdentityFiles<'_>) -> Result<TlsIdentity, HttpError> {
        let file_error = |flag, path: &Path, message: String| HttpError::File {
            flag,
            path: path.to_path_buf(),
            message,
        };
        let chain = CertificateDer::pem_file_iter(files.cert)
            .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
            .map_err(|e| file_error(files.cert_flag, files.cert, e.to_string()))?;
        if chain.is_empty() {
            let message = "no certificate in it (PEM, `-----BEGIN CERTIFICATE-----`)".into();
            return Err(file_error(files.cert_flag, files.cert, message));
        }
        let key = PrivateKeyDer::from_pem_file(files.key).map_err(|e| {
            let message = format!("{e} (a PEM private key: PKCS#8, PKCS#1 or SEC1)");
            file_error(files.key_flag, files.key, message)
        })?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let identity_error = |message: String| HttpError::Identity {
            cert_flag: files.cert_flag,
            cert: files.cert.to_path_buf(),
            key_flag: files.key_flag,
            key: files.key.to_path_buf(),
            message,
        };
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| identity_error(e.to_string()))?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(|e| identity_error(e.to_string()))?;
        Ok(TlsIdentity {
            config: Arc::new(config),
        })
    }
}

/// An HTTP server listening on the address asked for: tiny_http itself, or with TLS,
/// tiny_http on a loopback port behind a TLS front on that address (see the module doc).
pub struct HttpServer {
    /// The requests, whichever way they came.
    pub server: Arc<tiny_http::Server>,
    /// The address clients connect to.
    addr: SocketAddr,
    front: Option<TlsFront>,
}

impl HttpServer {
    /// Listens on `addr` (port 0: any free port, see [`HttpServer::addr`]).
    pub fn bind(addr: SocketAddr, tls: Option<&TlsIdentity>) -> Result<HttpServer, HttpError> {
        let inner_addr = match tls {
            Some(_) => SocketAddr::new(loopback_like(addr.ip()), 0),
            None => addr,
        };
        let server = tiny_http::Server::http(inner_addr).map_err(|e| HttpError::Bind {
            addr: inner_addr,
            message: e.to_string(),
        })?;
        let inner = server
            .server_addr()
            .to_ip()
            .ok_or_else(|| HttpError::Bind {
                addr: inner_addr,
                message: "not an IP listener".into(),
            })?;
        let front = tls
            .map(|identity| TlsFront::start(addr, inner, identity))
            .transpose()?;
        Ok(HttpServer {
            server: Arc::new(server),
            addr: front.as_ref().map_or(inner, |f| f.addr),
            front,
        })
    }

    /// The address clients connect to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `https` behind TLS, else `http`.
    pub fn scheme(&self) -> &'static str {
        if self.front.is_some() {
            "https"
        } else {
            "http"
        }
    }
}

/// The loopback address of `ip`'s family.
fn loopback_like(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
    }
}

/// Ends TLS on a public address and relays each connection to a server on loopback; accepts
/// until dropped.
struct TlsFront {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl TlsFront {
    fn start(
        public: SocketAddr,
        backend: SocketAddr,
        identity: &TlsIdentity,
    ) -> Result<TlsFront, HttpError> {
        let bind_error = |e: io::Error| HttpError::Bind {
            addr: public,
            message: e.to_string(),
        };
        let listener = TcpListener::bind(public).map_err(bind_error)?;
        let addr = listener.local_addr().map_err(bind_error)?;
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (stop, config) = (stop.clone(), identity.config.clone());
            std::thread::Builder::new()
                .name("storlab-tls".into())
                .spawn(move || accept(&listener, backend, &config, &stop))
                .map_err(HttpError::Thread)?
        };
        Ok(TlsFront {
            addr,
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for TlsFront {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept; a connection refused or failed means it has ended already.
        let wake = if self.addr.ip().is_unspecified() {
            SocketAddr::new(loopback_like(self.addr.ip()), self.addr.port())
        } else {
            self.addr
        };
        let _ = TcpStream::connect_timeout(&wake, Duration::from_secs(1));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Takes connections until `stop`; each is relayed by a thread of its own.
fn accept(
    listener: &TcpListener,
    backend: SocketAddr,
    config: &Arc<rustls::ServerConfig>,
    stop: &AtomicBool,
) {
    for client in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(client) = client else { continue };
        let config = config.clone();
        // A thread that cannot start drops its connection: the client sees it closed.
        let _ = std::thread::Builder::new()
            .name("storlab-tls-conn".into())
            .spawn(move || {
                let _ = Relay::handshake(client, config).and_then(|r| r.run(backend));
            });
    }
}

/// One client's TLS connection, its handshake done.
struct Relay {
    client: TcpStream,
    tls: rustls::ServerConnection,
}

impl Relay {
    /// Completes the handshake, each read bounded by [`HANDSHAKE_READ_TIMEOUT`].
    fn handshake(mut client: TcpStream, config: Arc<rustls::ServerConfig>) -> io::Result<Relay> {
        let mut tls = rustls::ServerConnection::new(config).map_err(io::Error::other)?;
        client.set_read_timeout(Some(HANDSHAKE_READ_TIMEOUT))?;
        client.set_write_timeout(Some(WRITE_TIMEOUT))?;
        if tls.is_handshaking() {
            tls.complete_io(&mut client)?;
        }
        client.set_read_timeout(None)?;
        Ok(Relay { client, tls })
    }

    /// Sends what TLS has queued for the client.
    fn flush(&mut self) -> io::Result<()> {
        while self.tls.wants_write() {
            self.tls.write_tls(&mut self.client)?;
        }
        Ok(())
    }

    /// Relays bytes both ways until either side ends or nothing moves for
    /// [`IDLE_TIMEOUT_MS`].
    fn run(mut self, backend: SocketAddr) -> io::Result<()> {
        let mut server = TcpStream::connect(backend)?;
        server.set_write_timeout(Some(WRITE_TIMEOUT))?;
        let mut buf = vec![0u8; 16 * 1024];
        let mut client_done = false;
        loop {
            self.flush()?;
            let client_events = if client_done { 0 } else { libc::POLLIN };
            let mut fds = [
                libc::pollfd {
                    fd: self.client.as_raw_fd(),
                    events: client_events,
                    revents: 0,
                },
                libc::pollfd {
                    fd: server.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            // SAFETY: `fds` is a valid array of two pollfd for the length given.
            let ready = unsafe { libc::poll(fds.as_mut_ptr(), 2, IDLE_TIMEOUT_MS) };
            if ready < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if ready == 0 {
                return Ok(());
            }
            if fds[0].revents != 0 {
                client_done = self.pass_client_bytes(&mut server, &mut buf)?;
            }
            if fds[1].revents != 0 {
                let n = server.read(&mut buf)?;
                if n == 0 {
                    self.tls.send_close_notify();
                    return self.flush();
                }
                self.tls.writer().write_all(&buf[..n])?;
            }
        }
    }

    /// Passes what the client sent to the server; true once the client has closed.
    fn pass_client_bytes(&mut self, server: &mut TcpStream, buf: &mut [u8]) -> io::Result<bool> {
        if self.tls.read_tls(&mut self.client)? == 0 {
            let _ = server.shutdown(Shutdown::Write);
            return Ok(true);
        }
        let state = match self.tls.process_new_packets() {
            Ok(state) => state,
            Err(e) => {
                // The alert rustls queued tells the client why.
                let _ = self.flush();
                return Err(io::Error::other(e));
            }
        };
        let mut left = state.plaintext_bytes_to_read();
        let closed = state.peer_has_closed();
        while left > 0 {
            let take = left.min(buf.len());
            let n = self.tls.reader().read(&mut buf[..take])?;
            if n == 0 {
                break;
            }
            server.write_all(&buf[..n])?;
            left -= n;
        }
        if closed {
            let _ = server.shutdown(Shutdown::Write);
        }
        Ok(closed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A self-signed certificate for localhost and 127.0.0.1, its files and their folder.
    struct Made {
        _dir: tempfile::TempDir,
        cert: PathBuf,
        key: PathBuf,
        der: CertificateDer<'static>,
    }

    fn made() -> Made {
        let names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
        let made = rcgen::generate_simple_self_signed(names).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = (dir.path().join("server.crt"), dir.path().join("server.key"));
        std::fs::write(&cert, made.cert.pem()).unwrap();
        std::fs::write(&key, made.signing_key.serialize_pem()).unwrap();
        Made {
            der: made.cert.der().clone(),
            _dir: dir,
            cert,
            key,
        }
    }

    fn identity(m: &Made) -> Result<TlsIdentity, HttpError> {
        TlsIdentity::read(&IdentityFiles {
            cert: &m.cert,
            cert_flag: "--tls-cert",
            key: &m.key,
            key_flag: "--tls-key",
        })
    }

    /// A TLS client trusting `root` only.
    fn client(addr: SocketAddr, root: &CertificateDer<'static>) -> io::Result<impl Read + Write> {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(root.clone()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let name = "localhost".try_into().unwrap();
        let tls = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
        let tcp = TcpStream::connect(addr)?;
        tcp.set_read_timeout(Some(Duration::from_secs(20)))?;
        Ok(rustls::StreamOwned::new(tls, tcp))
    }

    /// Answers `n` requests with `body`, from a thread.
    fn answer(http: &HttpServer, n: usize, body: String) -> JoinHandle<()> {
        let server = http.server.clone();
        std::thread::spawn(move || {
            for _ in 0..n {
                let request = server.recv().unwrap();
                let response = tiny_http::Response::from_string(body.clone());
                request.respond(response).unwrap();
            }
        })
    }

    fn get(stream: &mut (impl Read + Write)) -> io::Result<String> {
        // HTTP/1.0: the answer whole, not in chunks.
        stream.write_all(b"GET / HTTP/1.0\r\nHost: localhost\r\n\r\n")?;
        let mut page = String::new();
        stream.read_to_string(&mut page)?;
        Ok(page)
    }

    #[test]
    fn requests_over_tls_reach_the_server_and_whole_answers_come_back() {
        let m = made();
        let id = identity(&m).unwrap();
        let http = HttpServer::bind("127.0.0.1:0".parse().unwrap(), Some(&id)).unwrap();
        assert_eq!(http.scheme(), "https");
        // Larger than a TLS record and the relay's buffer: the answer crosses in pieces.
        let body = "0123456789abcdef".repeat(20_000);
        let server = answer(&http, 2, body.clone());
        for _ in 0..2 {
            let page = get(&mut client(http.addr(), &m.der).unwrap()).unwrap();
            assert!(
                page.starts_with("HTTP/1.0 200"),
                "{}",
                &page[..60.min(page.len())]
            );
            assert!(page.ends_with(&body), "the answer arrived cut");
        }
        server.join().unwrap();
    }

    #[test]
    fn plain_http_and_an_untrusting_client_get_no_page() {
        let m = made();
        let id = identity(&m).unwrap();
        let http = HttpServer::bind("127.0.0.1:0".parse().unwrap(), Some(&id)).unwrap();
        let mut plain = TcpStream::connect(http.addr()).unwrap();
        plain
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let got = get(&mut plain).unwrap_or_default();
        assert!(!got.contains("HTTP/1."), "plain HTTP was answered: {got:?}");
        let other = made();
        let refused = get(&mut client(http.addr(), &other.der).unwrap());
        let e = refused.expect_err("a client that does not trust the certificate got a page");
        assert!(e.to_string().contains("certificate"), "{e}");
    }

    #[test]
    fn a_key_not_the_certificates_or_a_file_without_one_is_refused_naming_the_files() {
        let (a, b) = (made(), made());
        let mixed = IdentityFiles {
            cert: &a.cert,
            cert_flag: "--tls-cert",
            key: &b.key,
            key_flag: "--tls-key",
        };
        let e = TlsIdentity::read(&mixed).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("--tls-cert {}", a.cert.display())),
            "{e}"
        );
        assert!(e.contains(&format!("--tls-key {}", b.key.display())), "{e}");
        std::fs::write(&a.cert, "not a certificate\n").unwrap();
        let e = identity(&a).unwrap_err().to_string();
        assert!(e.contains("no certificate in it"), "{e}");
        std::fs::write(&a.key, "").unwrap();
        let only_key = IdentityFiles {
            cert: &b.cert,
            cert_flag: "--tls-cert",
            key: &a.key,
            key_flag: "--tls-key",
        };
        let e = TlsIdentity::read(&only_key).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("--tls-key {}", a.key.display())),
            "{e}"
        );
    }

    #[test]
    fn without_tls_the_server_listens_where_asked() {
        let http = HttpServer::bind("127.0.0.1:0".parse().unwrap(), None).unwrap();
        assert_eq!(http.scheme(), "http");
        assert_ne!(http.addr().port(), 0);
    }
}
