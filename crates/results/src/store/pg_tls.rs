//! TLS to a PostgreSQL store, with libpq's settings and meanings, so that the password and the
//! results never cross a lab's network in clear:
//!
//! - `sslmode` (URL, else `PGSSLMODE`, else `prefer`): `disable` (never TLS), `prefer` (TLS
//!   when the server offers it), `require` (TLS or no connection), each without checking the
//!   server's certificate, as libpq (with `require`, a root certificate given makes it
//!   `verify-ca`, as libpq); `verify-ca` (the certificate chains to a trusted root) and
//!   `verify-full` (and names the host connected to).
//! - `sslrootcert` (URL, else `PGSSLROOTCERT`, else `~/.postgresql/root.crt`): a PEM file of
//!   the roots trusted, or `system` for the operating system's.
//!
//! tokio-postgres knows `disable`, `prefer` and `require` only: the URL it parses gets
//! `require` for the verifying modes and no `sslrootcert`; the verification is this module's
//! rustls configuration (ring's cryptography), handed to tokio-postgres-rustls.

use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, Error, SignatureScheme};

/// libpq's `sslmode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    const NAMES: [(&'static str, SslMode); 5] = [
        ("disable", SslMode::Disable),
        ("prefer", SslMode::Prefer),
        ("require", SslMode::Require),
        ("verify-ca", SslMode::VerifyCa),
        ("verify-full", SslMode::VerifyFull),
    ];

    fn parse(text: &str) -> Result<SslMode, String> {
        SslMode::NAMES
            .iter()
            .find(|(n, _)| *n == text)
            .map(|(_, m)| *m)
            .ok_or_else(|| {
                format!("sslmode={text}: give disable, prefer, require, verify-ca or verify-full")
            })
    }

    /// What tokio-postgres is told.
    fn for_tokio(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => "require",
        }
    }
}

/// The roots a verifying mode trusts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Roots {
    File(PathBuf),
    System,
}

/// A store URL's TLS settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tls {
    pub mode: SslMode,
    /// Given (URL or `PGSSLROOTCERT`), or the default file when it exists.
    pub roots: Option<Roots>,
}

/// Splits `url` into what tokio-postgres parses and its TLS settings (libpq's environment
/// variables where the URL says nothing).
pub fn split(url: &str) -> Result<(String, Tls), String> {
    let (head, query) = url.split_once('?').unwrap_or((url, ""));
    let mut kept = Vec::new();
    let (mut mode, mut roots) = (None, None);
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        match k {
            "sslmode" => mode = Some(SslMode::parse(&percent_decoded(v))?),
            "sslrootcert" => roots = Some(percent_decoded(v)),
            _ => kept.push(pair),
        }
    }
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let mode = match mode {
        Some(m) => m,
        None => env("PGSSLMODE")
            .map(|m| SslMode::parse(&m).map_err(|e| format!("PGSSLMODE: {e}")))
            .transpose()?
            .unwrap_or(SslMode::Prefer),
    };
    let roots = roots.or_else(|| env("PGSSLROOTCERT")).map(|r| {
        if r == "system" {
            Roots::System
        } else {
            Roots::File(PathBuf::from(r))
        }
    });
    let roots = roots.or_else(|| {
        let default = PathBuf::from(std::env::var_os("HOME")?).join(".postgresql/root.crt");
        default.is_file().then_some(Roots::File(default))
    });
    // libpq: `require` with a root certificate verifies the chain.
    let mode = if mode == SslMode::Require && roots.is_some() {
        SslMode::VerifyCa
    } else {
        mode
    };
    kept.push(match mode.for_tokio() {
        "disable" => "sslmode=disable",
        "prefer" => "sslmode=prefer",
        _ => "sslmode=require",
    });
    Ok((format!("{head}?{}", kept.join("&")), Tls { mode, roots }))
}

/// `%XX` escapes decoded (a path in a URL).
fn percent_decoded(v: &str) -> String {
    let bytes = v.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(h), Some(l)) = (
                bytes.get(i + 1).and_then(|b| hex(*b)),
                bytes.get(i + 2).and_then(|b| hex(*b)),
            )
        {
            out.push((h * 16 + l) as u8);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The rustls configuration of `tls`: no certificate check for `disable`, `prefer` and
/// `require`; the chain for `verify-ca`; the chain and the host name for `verify-full`.
pub fn client_config(tls: &Tls) -> Result<ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?;
    let verifier: Arc<dyn ServerCertVerifier> = match tls.mode {
        SslMode::Disable | SslMode::Prefer | SslMode::Require => {
            Arc::new(Unchecked(provider.clone()))
        }
        SslMode::VerifyCa | SslMode::VerifyFull => {
            let roots = trusted_roots(tls.roots.as_ref())?;
            let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| format!("TLS: {e}"))?;
            if tls.mode == SslMode::VerifyFull {
                webpki
            } else {
                Arc::new(ChainOnly(webpki))
            }
        }
    };
    Ok(builder
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth())
}

fn trusted_roots(roots: Option<&Roots>) -> Result<rustls::RootCertStore, String> {
    let mut store = rustls::RootCertStore::empty();
    match roots {
        None => {
            return Err("sslmode=verify-ca and verify-full need the roots to trust: sslrootcert=FILE (PEM) in the URL or PGSSLROOTCERT, ~/.postgresql/root.crt, or sslrootcert=system".into());
        }
        Some(Roots::System) => {
            let found = rustls_native_certs::load_native_certs();
            let (added, _) = store.add_parsable_certificates(found.certs);
            if added == 0 {
                return Err("sslrootcert=system: no root certificate found on this system".into());
            }
        }
        Some(Roots::File(path)) => {
            let certs = CertificateDer::pem_file_iter(path)
                .and_then(|i| i.collect::<Result<Vec<_>, _>>())
                .map_err(|e| format!("sslrootcert {}: {e}", path.display()))?;
            let (added, _) = store.add_parsable_certificates(certs);
            if added == 0 {
                return Err(format!(
                    "sslrootcert {}: no certificate in it",
                    path.display()
                ));
            }
        }
    }
    Ok(store)
}

/// `verify-ca`: the chain must verify; the host name is not checked, as libpq.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// `prefer` and `require` without roots: encrypted, the certificate not checked (as libpq);
/// the handshake's signatures still are.
#[derive(Debug)]
struct Unchecked(Arc<CryptoProvider>);

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libpq_modes_are_split_from_what_tokio_postgres_parses() {
        let (url, tls) = split(
            "postgres://u@h:5432/db?connect_timeout=5&sslmode=verify-full&sslrootcert=%2Ftmp%2Fca.crt",
        )
        .unwrap();
        assert_eq!(
            url,
            "postgres://u@h:5432/db?connect_timeout=5&sslmode=require"
        );
        assert_eq!(
            tls,
            Tls {
                mode: SslMode::VerifyFull,
                roots: Some(Roots::File("/tmp/ca.crt".into())),
            }
        );
        let (url, tls) = split("postgres://u@h/db?sslmode=disable").unwrap();
        assert_eq!(
            (url.as_str(), tls.mode),
            ("postgres://u@h/db?sslmode=disable", SslMode::Disable)
        );
        // `require` with roots verifies the chain, as libpq.
        let (_, tls) = split("postgres://u@h/db?sslmode=require&sslrootcert=system").unwrap();
        assert_eq!(
            (tls.mode, tls.roots),
            (SslMode::VerifyCa, Some(Roots::System))
        );
        let e = split("postgres://u@h/db?sslmode=verify").unwrap_err();
        assert!(e.contains("sslmode=verify: give disable"), "{e}");
        let e = client_config(&Tls {
            mode: SslMode::VerifyFull,
            roots: None,
        })
        .unwrap_err();
        assert!(e.contains("need the roots to trust"), "{e}");
    }
}
