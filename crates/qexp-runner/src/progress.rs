//! Progress on a terminal (a bar per point), one progress line per point
//! always (logged under [`crate::PROGRESS_TARGET`]).

use indicatif::{ProgressBar, ProgressStyle};

/// Progress display for one point.
pub(crate) struct PointProgress {
    bar: ProgressBar,
}

impl PointProgress {
    /// A bar for `total` requests; hidden when stderr is not a terminal.
    pub fn new(label: &str, total: u64) -> PointProgress {
        let bar = ProgressBar::new(total);
        bar.set_style(
            ProgressStyle::with_template("{prefix:>28} [{bar:30}] {pos}/{len} {elapsed} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        bar.set_prefix(label.to_string());
        PointProgress { bar }
    }

    /// One request finished.
    pub fn inc(&self, failed: bool) {
        self.bar.inc(1);
        if failed {
            self.bar.set_message("(failures)");
        }
    }

    /// Ends the bar and prints the point's one-line result.
    pub fn finish(self, line: String) {
        self.bar.finish_and_clear();
        tracing::info!(target: crate::PROGRESS_TARGET, "{line}");
    }
}
