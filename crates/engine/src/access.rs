//! Who may read what storlab serves over HTTP (`storlab serve`, `--metrics`): loopback
//! addresses are open to this machine's users; any other address needs a token (`--token
//! FILE`, `--metrics-token FILE`), which each request carries as `Authorization: Bearer TOKEN`
//! (Prometheus's `authorization` / `bearer_token_file`, curl's `-H`), or as the password of
//! HTTP Basic authentication with any user name (what a browser asks for after a 401).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use base64::Engine as _;

/// The shortest token taken: shorter ones are guessed.
pub const MIN_TOKEN_CHARS: usize = 16;

#[derive(Debug, thiserror::Error)]
pub enum AccessError {
    #[error("{flag} {path}: {source}")]
    Read {
        flag: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{flag} {path}: the token (its first line) has {chars} characters; give at least {MIN_TOKEN_CHARS} (e.g. `head -c 24 /dev/urandom | base64 > {path}`)"
    )]
    Short {
        flag: &'static str,
        path: PathBuf,
        chars: usize,
    },
    #[error(
        "{listen_flag} {addr} is not a loopback address: whoever reaches it would read every result; give {token_flag} FILE (a bearer token) or listen on 127.0.0.1"
    )]
    OpenWithoutToken {
        listen_flag: &'static str,
        token_flag: &'static str,
        addr: SocketAddr,
    },
    #[error(transparent)]
    Tls(#[from] crate::http::HttpError),
}

/// A bearer token read from a file.
#[derive(Clone)]
pub struct Token {
    secret: String,
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(***)")
    }
}

impl Token {
    /// The token in `path`'s first line (spaces around it trimmed). `flag` names the option
    /// in errors.
    pub fn read(path: &Path, flag: &'static str) -> Result<Token, AccessError> {
        let text = std::fs::read_to_string(path).map_err(|source| AccessError::Read {
            flag,
            path: path.to_path_buf(),
            source,
        })?;
        let secret = text.lines().next().unwrap_or("").trim().to_string();
        if secret.chars().count() < MIN_TOKEN_CHARS {
            return Err(AccessError::Short {
                flag,
                path: path.to_path_buf(),
                chars: secret.chars().count(),
            });
        }
        Ok(Token { secret })
    }

    /// Whether a request's `Authorization` header carries the token: `Bearer TOKEN`, or
    /// `Basic` with the token as the password. Compared in constant time.
    pub fn admits(&self, authorization: Option<&str>) -> bool {
        let Some(value) = authorization.map(str::trim) else {
            return false;
        };
        let (scheme, rest) = value.split_once(' ').unwrap_or((value, ""));
        let given = if scheme.eq_ignore_ascii_case("bearer") {
            rest.trim().to_string()
        } else if scheme.eq_ignore_ascii_case("basic") {
            let Ok(decoded) = base64::engine::general_purpose::STANDARD.decode(rest.trim()) else {
                return false;
            };
            let text = String::from_utf8_lossy(&decoded).to_string();
            match text.split_once(':') {
                Some((_, password)) => password.to_string(),
                None => return false,
            }
        } else {
            return false;
        };
        same(given.as_bytes(), self.secret.as_bytes())
    }
}

/// Equal bytes, in a time that depends on their lengths only.
fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Refuses to serve on a non-loopback address without a token.
pub fn check_exposure(
    addr: SocketAddr,
    token: Option<&Token>,
    listen_flag: &'static str,
    token_flag: &'static str,
) -> Result<(), AccessError> {
    if addr.ip().is_loopback() || token.is_some() {
        return Ok(());
    }
    Err(AccessError::OpenWithoutToken {
        listen_flag,
        token_flag,
        addr,
    })
}

/// The options that name a server's address, token and TLS files, for errors and warnings.
pub struct AccessFlags {
    pub listen: &'static str,
    pub token: &'static str,
    pub tls_cert: &'static str,
    pub tls_key: &'static str,
}

/// Who a server admits and how it is reached: its token and its TLS identity.
pub struct Access {
    pub token: Option<Token>,
    pub tls: Option<crate::http::TlsIdentity>,
}

impl Access {
    /// Reads the token file and the TLS certificate and key given; refuses a non-loopback
    /// `addr` without a token.
    pub fn read(
        addr: SocketAddr,
        token: Option<&Path>,
        tls: Option<(&Path, &Path)>,
        flags: &AccessFlags,
    ) -> Result<Access, AccessError> {
        let token = token.map(|p| Token::read(p, flags.token)).transpose()?;
        check_exposure(addr, token.as_ref(), flags.listen, flags.token)?;
        let tls = tls
            .map(|(cert, key)| {
                crate::http::TlsIdentity::read(&crate::http::IdentityFiles {
                    cert,
                    cert_flag: flags.tls_cert,
                    key,
                    key_flag: flags.tls_key,
                })
            })
            .transpose()?;
        Ok(Access { token, tls })
    }

    /// What to tell the user when the token will cross a network in clear: a non-loopback
    /// address without TLS.
    pub fn clear_text_warning(&self, addr: SocketAddr, flags: &AccessFlags) -> Option<String> {
        (!addr.ip().is_loopback() && self.token.is_some() && self.tls.is_none()).then(|| {
            format!(
                "{} {addr} without {}/{}: the token and every page cross the network in clear",
                flags.listen, flags.tls_cert, flags.tls_key
            )
        })
    }
}

/// The `WWW-Authenticate` challenge of a 401: Basic, so that a browser asks for the token
/// (as the password); scrapers send their bearer token without being asked.
pub const CHALLENGE: &str = "Basic realm=\"storlab\", charset=\"UTF-8\"";

#[cfg(test)]
mod tests {
    use super::*;

    fn token(text: &str) -> Result<Token, AccessError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, text).unwrap();
        Token::read(&path, "--token")
    }

    #[test]
    fn a_request_is_admitted_with_the_token_as_bearer_or_basic_password_only() {
        let t = token("  0123456789abcdef-secret \nignored\n").unwrap();
        assert!(t.admits(Some("Bearer 0123456789abcdef-secret")));
        assert!(t.admits(Some("bearer   0123456789abcdef-secret ")));
        let basic = |s: &str| {
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(s)
            )
        };
        assert!(t.admits(Some(&basic("anyone:0123456789abcdef-secret"))));
        for wrong in [
            None,
            Some(""),
            Some("Bearer 0123456789abcdef-secre"),
            Some("Bearer 0123456789abcdef-secret2"),
            Some("Token 0123456789abcdef-secret"),
            Some(basic("0123456789abcdef-secret").as_str()),
            Some(basic("u:wrong").as_str()),
            Some("Basic !!!"),
        ] {
            assert!(!t.admits(wrong), "{wrong:?}");
        }
        assert_eq!(format!("{t:?}"), "Token(***)");
    }

    #[test]
    fn a_short_token_and_an_open_address_without_one_are_refused() {
        let e = token("short\n").unwrap_err().to_string();
        assert!(e.contains("has 5 characters; give at least 16"), "{e}");
        let open: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        let e = check_exposure(open, None, "--listen", "--token")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--listen 0.0.0.0:8080 is not a loopback address")
                && e.contains("--token FILE"),
            "{e}"
        );
        let t = token("0123456789abcdef").unwrap();
        assert!(check_exposure(open, Some(&t), "--listen", "--token").is_ok());
        let local: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        assert!(check_exposure(local, None, "--listen", "--token").is_ok());
    }
}
