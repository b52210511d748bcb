//! How qexp timed a run's streamed requests.

use serde::{Deserialize, Serialize};

/// Which HTTP client timed the streamed requests, and whether the kernel's
/// receive stamps timed the arrivals; either way, sent is counted from the
/// wire. Runs made before it was recorded have none: they timed from before
/// each request was built.
///
/// The serialised names are whole sentences because runs recorded them so
/// before this type existed; `qexp diff` compares the values, so a new
/// spelling would make every old run look differently timed. Never change one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ClientTiming {
    /// qexp's own HTTP/1.1 reader (plain-HTTP servers), every read stamped
    /// when it returned (kernel stamps off, refused, or missing on a read;
    /// every run before kernel stamps existed).
    #[serde(rename = "qexp-http1, from the wire")]
    Http1FromWire,
    /// qexp's own HTTP/1.1 reader, every read timed by the kernel's receive
    /// stamp (Linux `SO_TIMESTAMPNS`): qexp's own scheduling is not in it.
    #[serde(rename = "qexp-http1, from the wire, kernel receive stamps")]
    Http1KernelStamps,
    /// reqwest (HTTPS, or `QEXP_HTTP_CLIENT=reqwest`).
    #[serde(rename = "reqwest, from the wire")]
    ReqwestFromWire,
}

impl ClientTiming {
    /// Every kind, in declaration order.
    pub const ALL: [ClientTiming; 3] = [
        ClientTiming::Http1FromWire,
        ClientTiming::Http1KernelStamps,
        ClientTiming::ReqwestFromWire,
    ];

    /// The recorded spelling (also what [`std::fmt::Display`] shows).
    pub fn as_str(self) -> &'static str {
        match self {
            ClientTiming::Http1FromWire => "qexp-http1, from the wire",
            ClientTiming::Http1KernelStamps => "qexp-http1, from the wire, kernel receive stamps",
            ClientTiming::ReqwestFromWire => "reqwest, from the wire",
        }
    }

    /// The kind recorded as `name`, if any.
    pub fn from_name(name: &str) -> Option<ClientTiming> {
        Self::ALL.into_iter().find(|t| t.as_str() == name)
    }
}

impl std::fmt::Display for ClientTiming {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The strings manifests hold since `client_timing` was recorded.
    #[test]
    fn recorded_names_are_pinned_and_round_trip() {
        for (t, name) in [
            (ClientTiming::Http1FromWire, "qexp-http1, from the wire"),
            (
                ClientTiming::Http1KernelStamps,
                "qexp-http1, from the wire, kernel receive stamps",
            ),
            (ClientTiming::ReqwestFromWire, "reqwest, from the wire"),
        ] {
            let json = format!("\"{name}\"");
            assert_eq!(serde_json::to_string(&t).unwrap_or_default(), json);
            assert_eq!(serde_json::from_str::<ClientTiming>(&json).ok(), Some(t));
            assert_eq!(ClientTiming::from_name(name), Some(t));
            assert_eq!(t.to_string(), name);
        }
        assert!(serde_json::from_str::<ClientTiming>("\"reqwest\"").is_err());
    }
}
