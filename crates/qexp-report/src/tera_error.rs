//! Tera errors as one line of text, for the renderers of reports and
//! narratives alike.

/// A tera error with its causes, on one line.
pub(crate) fn chain(e: &tera::Error) -> String {
    let mut message = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        message.push_str(": ");
        message.push_str(&s.to_string());
        src = s.source();
    }
    message
}
