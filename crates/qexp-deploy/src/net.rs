//! The server's address: picking a free port and asking whether one serves.

use std::net::TcpListener;
use std::time::Duration;

use tokio::net::TcpStream;

use crate::LaunchError;

/// How long a connection attempt may take before the port counts as closed.
const CONNECT_TIMEOUT: Duration = Duration::from_millis(500);

/// A port nothing listens on now: bind port 0, read it, let it go.
pub(crate) fn free_port(host: &str) -> Result<u16, LaunchError> {
    let no_port = |source| LaunchError::NoPort {
        host: host.to_owned(),
        source,
    };
    let listener = TcpListener::bind((host, 0)).map_err(no_port)?;
    let port = listener.local_addr().map_err(no_port)?.port();
    Ok(port)
}

/// Whether something accepts TCP connections on `host:port`.
pub(crate) async fn accepts(host: &str, port: u16) -> bool {
    matches!(
        tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect((host, port))).await,
        Ok(Ok(_))
    )
}

/// `http://host:port`, with brackets around an IPv6 literal.
pub(crate) fn base_url(host: &str, port: u16) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("http://[{host}]:{port}")
    } else {
        format!("http://{host}:{port}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_listener_accepts_and_a_dropped_one_does_not() {
        let listener = TcpListener::bind("127.0.0.1:0").ok();
        let port = listener
            .as_ref()
            .and_then(|l| l.local_addr().ok())
            .map(|a| a.port());
        let Some(port) = port else {
            panic!("cannot bind a test listener");
        };
        assert!(accepts("127.0.0.1", port).await);
        drop(listener);
        assert!(!accepts("127.0.0.1", port).await);
    }

    #[test]
    fn base_url_brackets_ipv6() {
        assert_eq!(base_url("127.0.0.1", 80), "http://127.0.0.1:80");
        assert_eq!(base_url("::1", 80), "http://[::1]:80");
    }
}
