//! A point whose failed requests exceeded the plan's `[tolerance]`: what
//! `qexp run` says after its summary, and why it exits 3.

use qexp_client::ErrorClass;
use qexp_store::RequestRow;
use std::fmt;

/// One (trial, point) whose failed requests exceeded the plan's
/// `[tolerance]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverTolerance {
    /// The point as the progress line names it (shard, trial and point).
    pub label: String,
    /// Requests of the point that failed.
    pub failed: u32,
    /// Requests of the point that finished, failed or not.
    pub done: u32,
    /// Each class of failure among the measured requests and how many,
    /// the most frequent first (ties in the classes' order).
    pub classes: Vec<(ErrorClass, u32)>,
}

impl OverTolerance {
    /// The point `label`, its counts, and the classes of `measured`'s failures.
    pub(crate) fn new(label: &str, failed: u32, done: u32, measured: &[RequestRow]) -> Self {
        let mut classes: Vec<(ErrorClass, u32)> = Vec::new();
        for class in measured.iter().filter_map(|r| r.error_class) {
            match classes.iter_mut().find(|(c, _)| *c == class) {
                Some((_, n)) => *n += 1,
                None => classes.push((class, 1)),
            }
        }
        classes.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.as_str().cmp(b.0.as_str())));
        Self {
            label: label.to_owned(),
            failed,
            done,
            classes,
        }
    }
}

impl fmt::Display for OverTolerance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} of {} requests failed (",
            self.label, self.failed, self.done
        )?;
        for (i, (class, n)) in self.classes.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            write!(f, "{sep}{n} {}", class.as_str())?;
        }
        f.write_str(")")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_classes_are_counted_most_frequent_first() {
        let row = |class| RequestRow {
            error_class: class,
            ..RequestRow::default()
        };
        let rows = [
            row(None),
            row(Some(ErrorClass::Timeout)),
            row(Some(ErrorClass::HttpStatus)),
            row(Some(ErrorClass::Timeout)),
        ];
        let o = OverTolerance::new("trial 1/1 c=1 in=10 out=5", 3, 4, &rows);
        assert_eq!(
            o.classes,
            [(ErrorClass::Timeout, 2), (ErrorClass::HttpStatus, 1)]
        );
        assert_eq!(
            o.to_string(),
            "trial 1/1 c=1 in=10 out=5: 3 of 4 requests failed (2 timeout, 1 http_status)"
        );
    }
}
