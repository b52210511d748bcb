//! `[timeouts]` and `[tolerance]`: how long one request may take, and how
//! many failed requests a point may have before `qexp run` says so in its
//! exit code.

use serde::Deserialize;

use std::time::Duration;
use toml::Spanned;

use crate::error::Invalid;

/// `[timeouts]`: seconds; every request ends by the first limit that runs
/// out, and is recorded as a failure of that limit's class. None is retried.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimeoutsSection {
    /// TCP/TLS connection set-up.
    #[serde(default = "default_connect")]
    pub connect_s: Spanned<f64>,
    /// Sent → first byte of the response body (queueing and prefill included).
    #[serde(default = "default_first_byte")]
    pub first_byte_s: Spanned<f64>,
    /// The longest silence between two reads of a stream.
    #[serde(default = "default_idle")]
    pub idle_s: Spanned<f64>,
    /// Sent → end of the stream; default `target.timeout_s`.
    #[serde(default)]
    pub total_s: Option<Spanned<f64>>,
}

fn default_connect() -> Spanned<f64> {
    Spanned::new(0..0, 10.0)
}
fn default_first_byte() -> Spanned<f64> {
    Spanned::new(0..0, 300.0)
}
fn default_idle() -> Spanned<f64> {
    Spanned::new(0..0, 60.0)
}

impl Default for TimeoutsSection {
    fn default() -> Self {
        TimeoutsSection {
            connect_s: default_connect(),
            first_byte_s: default_first_byte(),
            idle_s: default_idle(),
            total_s: None,
        }
    }
}

/// The four limits of one request, each capped by the total.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestTimeouts {
    /// Connection set-up.
    pub connect: Duration,
    /// Sent → first response byte.
    pub first_byte: Duration,
    /// Longest silence within a stream.
    pub idle: Duration,
    /// Sent → end of stream.
    pub total: Duration,
}

/// The longest wait a plan may ask for, in seconds (a week): far beyond any
/// request's or server's, and well inside what a deadline can hold (an
/// instant plus `Duration::MAX` overflows).
pub(crate) const MAX_WAIT_S: f64 = 7.0 * 24.0 * 3600.0;

impl TimeoutsSection {
    /// The limits in force, `target_timeout_s` standing for an unset
    /// `total_s`; each at most a week, whatever it was given.
    pub fn resolve(&self, target_timeout_s: f64) -> RequestTimeouts {
        let most = Duration::from_secs_f64(MAX_WAIT_S);
        let secs = |s: f64| Duration::try_from_secs_f64(s).map_or(most, |d| d.min(most));
        let total = secs(
            self.total_s
                .as_ref()
                .map_or(target_timeout_s, |t| *t.get_ref()),
        );
        RequestTimeouts {
            connect: secs(*self.connect_s.get_ref()).min(total),
            first_byte: secs(*self.first_byte_s.get_ref()).min(total),
            idle: secs(*self.idle_s.get_ref()).min(total),
            total,
        }
    }

    pub(crate) fn validate(&self) -> Result<(), Invalid> {
        let all = [
            ("timeouts.connect_s", Some(&self.connect_s)),
            ("timeouts.first_byte_s", Some(&self.first_byte_s)),
            ("timeouts.idle_s", Some(&self.idle_s)),
            ("timeouts.total_s", self.total_s.as_ref()),
        ];
        for (key, value) in all {
            if let Some(v) = value {
                let x = *v.get_ref();
                if !(x.is_finite() && x > 0.0 && x <= MAX_WAIT_S) {
                    return Err((
                        v.span(),
                        Some(key.to_string()),
                        "must be a positive number of seconds, at most a week".to_string(),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// `[tolerance]`: failed requests a point may have; above it `qexp run`
/// exits with its own code (the run is still complete and kept).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToleranceSection {
    /// Failed measured requests / measured requests of one (trial, point), 0 to 1; default 0.
    #[serde(default = "default_failed_fraction")]
    pub max_failed_fraction: Spanned<f64>,
}

fn default_failed_fraction() -> Spanned<f64> {
    Spanned::new(0..0, 0.0)
}

impl Default for ToleranceSection {
    fn default() -> Self {
        ToleranceSection {
            max_failed_fraction: default_failed_fraction(),
        }
    }
}

impl ToleranceSection {
    /// True when `failed` of `requests` is more than the tolerance allows.
    pub fn exceeded(&self, failed: u32, requests: u32) -> bool {
        requests > 0
            && f64::from(failed) > *self.max_failed_fraction.get_ref() * f64::from(requests)
    }

    pub(crate) fn validate(&self) -> Result<(), Invalid> {
        let f = &self.max_failed_fraction;
        if !(0.0..=1.0).contains(f.get_ref()) {
            return Err((
                f.span(),
                Some("tolerance.max_failed_fraction".to_string()),
                "expected a fraction from 0 to 1, e.g. 0.01".to_string(),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_capped_by_the_total() {
        let t = TimeoutsSection::default().resolve(30.0);
        assert_eq!(t.connect, Duration::from_secs(10));
        assert_eq!(t.first_byte, Duration::from_secs(30));
        assert_eq!(t.idle, Duration::from_secs(30));
        assert_eq!(t.total, Duration::from_secs(30));
        let t = TimeoutsSection::default().resolve(600.0);
        assert_eq!(t.first_byte, Duration::from_secs(300));
        assert_eq!(t.idle, Duration::from_secs(60));
    }

    #[test]
    fn tolerance_counts_failures_against_requests() {
        let mut t = ToleranceSection::default();
        assert!(!t.exceeded(0, 10));
        assert!(t.exceeded(1, 10));
        t.max_failed_fraction = Spanned::new(0..0, 0.1);
        assert!(!t.exceeded(1, 10));
        assert!(t.exceeded(2, 10));
        assert!(!t.exceeded(0, 0));
    }
}
