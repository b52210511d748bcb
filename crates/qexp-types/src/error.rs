//! An error and its causes, each said once on one line: what the binary
//! prints, and what a run, a log or a report keeps as text.

use std::error::Error;

/// `e`'s message and then each of its causes', joined by ": ".
///
/// qexp's own errors say a cause only by chaining it (no message repeats
/// its source), so their chain is the sentence. Some dependencies' errors
/// end their message with their source's and chain it as well: a cause
/// the sentence already ends with is not said again.
#[must_use]
pub fn chain(e: &(dyn Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !text.is_empty() && !out.ends_with(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        cause = c.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fmt;

    /// An error with a message and, perhaps, a cause.
    #[derive(Debug)]
    struct Link {
        message: String,
        cause: Option<Box<Link>>,
    }

    impl fmt::Display for Link {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(&self.message)
        }
    }

    impl Error for Link {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            self.cause.as_deref().map(|c| c as &(dyn Error + 'static))
        }
    }

    fn link(message: &str, cause: Option<Link>) -> Link {
        Link {
            message: message.to_owned(),
            cause: cause.map(Box::new),
        }
    }

    #[test]
    fn each_cause_follows_its_error() {
        let e = link(
            "cannot read plan p.toml",
            Some(link("permission denied", None)),
        );
        assert_eq!(chain(&e), "cannot read plan p.toml: permission denied");
        let deep = link("cannot aggregate r", Some(e));
        assert_eq!(
            chain(&deep),
            "cannot aggregate r: cannot read plan p.toml: permission denied"
        );
    }

    #[test]
    fn a_cause_its_parent_already_ends_with_is_said_once() {
        let e = link(
            "request failed: connection refused",
            Some(link("connection refused", None)),
        );
        assert_eq!(chain(&e), "request failed: connection refused");
        // Said inside the message but not at its end, it is said again.
        let e = link("refused (retrying)", Some(link("refused", None)));
        assert_eq!(chain(&e), "refused (retrying): refused");
    }
}
