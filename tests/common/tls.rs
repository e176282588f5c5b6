//! A TLS client for the tests of storlab's https endpoints (serve, metrics).

use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::CertificateDer;

/// A TLS connection to `addr` that trusts `root` only and expects the name localhost.
pub fn client(
    addr: &str,
    root: &CertificateDer<'static>,
) -> rustls::StreamOwned<rustls::ClientConnection, TcpStream> {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(root.clone())
        .expect("a certificate the test made");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("ring's default versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = "localhost".try_into().expect("a valid name");
    let tls = rustls::ClientConnection::new(Arc::new(config), name).expect("a client");
    let tcp = TcpStream::connect(addr).expect("connect to storlab");
    tcp.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    rustls::StreamOwned::new(tls, tcp)
}
