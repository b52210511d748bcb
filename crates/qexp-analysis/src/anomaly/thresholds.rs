//! The limits every detector uses, from the plan's `[analysis]` section.

use crate::format::{percent, seconds};
use serde::Serialize;

/// Limits for the detectors; each is printed in the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Thresholds {
    /// CV across trials above which a point is noisy (`[analysis] cv_threshold`).
    pub cv: f64,
    /// Throughput gain per doubling of concurrency below which throughput has stopped scaling (`knee_gain`).
    pub knee_gain: f64,
    /// TTFT above this many times its lowest-concurrency value has left its low-load plateau (`ttft_plateau`).
    pub ttft_plateau: f64,
    /// Relative change never flagged as a wrong direction or an outlier trial (`min_change`).
    pub min_change: f64,
    /// Send lag floor, seconds (`send_lag_s`): lag must exceed it and `send_lag_fraction` of TTFT.
    pub send_lag_s: f64,
    /// Send lag as a fraction of the trial's median TTFT (`send_lag_fraction`).
    pub send_lag_fraction: f64,
    /// Level of the Mann–Whitney test that verifies a wrong direction (fixed at 0.05).
    pub alpha: f64,
    /// Achieved send rate this far below the schedule's: the client set the pace (fixed at 3%).
    pub rate_shortfall: f64,
    /// Allowed difference between planned and server-reported prompt tokens
    /// (`[workload] input_tolerance` and `input_tolerance_tokens`).
    pub input_tolerance: qexp_plan::InputTolerance,
}

/// One threshold as the report prints it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThresholdRow {
    /// Plan key, e.g. `analysis.cv_threshold`.
    pub key: &'static str,
    /// The value with its unit.
    pub value: String,
    /// What it decides.
    pub meaning: &'static str,
    /// Where the value came from.
    pub origin: ThresholdOrigin,
}

/// Where one threshold's value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ThresholdOrigin {
    /// The run's plan sets it.
    Plan,
    /// qexp's default: the plan leaves it out, or could not be used.
    Default,
    /// Fixed by qexp; no plan key sets it.
    Fixed,
}

/// Where a run's thresholds came from as a whole.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "from", rename_all = "snake_case")]
pub enum ThresholdSource {
    /// The run's recorded plan (keys it leaves out keep their defaults).
    Plan,
    /// qexp's defaults, because the recorded plan could not be used.
    Defaults {
        /// Why, as a sentence fragment ("the plan no longer parses: …").
        reason: String,
    },
}

/// The key of the threshold no plan sets.
const FIXED_ALPHA: &str = "(fixed) alpha";
const FIXED_RATE_SHORTFALL: &str = "(fixed) rate_shortfall";

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds::from_plan(&qexp_plan::AnalysisSection::default())
    }
}

impl Thresholds {
    /// Thresholds from the plan's `[analysis]` section; the input tolerance keeps its default.
    pub fn from_plan(a: &qexp_plan::AnalysisSection) -> Self {
        Thresholds {
            cv: a.cv_threshold,
            knee_gain: a.knee_gain,
            ttft_plateau: a.ttft_plateau,
            min_change: a.min_change,
            send_lag_s: a.send_lag_s,
            send_lag_fraction: a.send_lag_fraction,
            alpha: 0.05,
            rate_shortfall: 0.03,
            input_tolerance: qexp_plan::InputTolerance::default(),
        }
    }

    /// Thresholds from a whole plan: `[analysis]` plus `[workload]`'s input tolerance.
    pub fn from_plan_file(p: &qexp_plan::PlanFile) -> Self {
        Thresholds {
            input_tolerance: p.workload.prompt_tolerance(),
            ..Thresholds::from_plan(&p.analysis)
        }
    }

    /// The limit on a trial's send lag given its median TTFT (NaN TTFT: the floor alone).
    pub fn send_lag_limit(&self, ttft_s: f64) -> f64 {
        let relative = self.send_lag_fraction * ttft_s;
        if relative.is_finite() {
            self.send_lag_s.max(relative)
        } else {
            self.send_lag_s
        }
    }

    /// The thresholds of a run's recorded plan (`path` only names it in
    /// messages), and where they came from: qexp's defaults when the plan
    /// no longer parses, with the reason.
    pub fn of_recorded_plan(
        path: &str,
        text: &str,
    ) -> (Thresholds, ThresholdSource, Option<qexp_plan::Plan>) {
        match qexp_plan::Plan::parse(std::path::Path::new(path), text) {
            Ok(plan) => (
                Thresholds::from_plan_file(&plan.file),
                ThresholdSource::Plan,
                Some(plan),
            ),
            Err(e) => (
                Thresholds::default(),
                ThresholdSource::Defaults {
                    reason: format!(
                        "the recorded plan no longer parses: {}",
                        qexp_types::error::chain(&e)
                    ),
                },
                None,
            ),
        }
    }

    /// Rows for the report's thresholds table, each with its origin: a key
    /// `plan` sets comes from the plan, any other from qexp's defaults.
    pub fn rows_for(&self, plan: Option<&qexp_plan::Plan>) -> Vec<ThresholdRow> {
        let mut rows = self.rows();
        for r in &mut rows {
            r.origin = if [FIXED_ALPHA, FIXED_RATE_SHORTFALL].contains(&r.key) {
                ThresholdOrigin::Fixed
            } else if plan.is_some_and(|p| p.sets(r.key)) {
                ThresholdOrigin::Plan
            } else {
                ThresholdOrigin::Default
            };
        }
        rows
    }

    /// Rows for the report's thresholds table (origin: default; see [`Thresholds::rows_for`]).
    pub fn rows(&self) -> Vec<ThresholdRow> {
        let origin = ThresholdOrigin::Default;
        vec![
            ThresholdRow {
                key: "analysis.cv_threshold",
                value: percent(self.cv),
                meaning: "a point whose trials vary more than this (CV) is noisy",
                origin,
            },
            ThresholdRow {
                key: "analysis.knee_gain",
                value: format!("{} per doubling", percent(self.knee_gain)),
                meaning:
                    "throughput gaining less than this per doubling of concurrency has saturated",
                origin,
            },
            ThresholdRow {
                key: "analysis.ttft_plateau",
                value: format!("{}× the lowest concurrency's TTFT", self.ttft_plateau),
                meaning:
                    "TTFT above this has left its low-load plateau: the knee says what users pay",
                origin,
            },
            ThresholdRow {
                key: "analysis.min_change",
                value: percent(self.min_change),
                meaning: "smaller changes are never flagged as a wrong direction or an outlier",
                origin,
            },
            ThresholdRow {
                key: "analysis.send_lag_s",
                value: seconds(self.send_lag_s),
                meaning: "send lag above this and above send_lag_fraction of TTFT: client behind",
                origin,
            },
            ThresholdRow {
                key: "analysis.send_lag_fraction",
                value: format!("{} of median TTFT", percent(self.send_lag_fraction)),
                meaning: "send lag above this and above send_lag_s: client behind",
                origin,
            },
            ThresholdRow {
                key: FIXED_ALPHA,
                value: format!("{}", self.alpha),
                meaning: "Mann–Whitney level that verifies a wrong direction",
                origin,
            },
            ThresholdRow {
                key: FIXED_RATE_SHORTFALL,
                value: percent(self.rate_shortfall),
                meaning:
                    "open-loop sends this far below the schedule's rate: the client set the pace",
                origin,
            },
            ThresholdRow {
                key: "workload.input_tolerance",
                value: percent(self.input_tolerance.share),
                meaning: "server prompt tokens further than this share of the plan's, and \
                          further than input_tolerance_tokens: mismatch",
                origin,
            },
            ThresholdRow {
                key: "workload.input_tolerance_tokens",
                value: format!("{} tokens", self.input_tolerance.tokens),
                meaning: "prompt tokens always allowed off the plan, however short the prompt",
                origin,
            },
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_the_plan_defaults() {
        let t = Thresholds::default();
        assert_eq!(
            (
                t.cv,
                t.knee_gain,
                t.min_change,
                t.send_lag_s,
                t.send_lag_fraction,
                t.alpha
            ),
            (0.10, 0.05, 0.02, 0.010, 0.05, 0.05)
        );
        assert_eq!(t.input_tolerance, qexp_plan::InputTolerance::default());
    }

    #[test]
    fn from_plan_reads_every_key() {
        let a = qexp_plan::AnalysisSection {
            cv_threshold: 0.2,
            knee_gain: 0.1,
            ttft_plateau: 3.0,
            min_change: 0.03,
            send_lag_s: 0.05,
            send_lag_fraction: 0.1,
            baseline: None,
        };
        let t = Thresholds::from_plan(&a);
        assert_eq!(
            (
                t.cv,
                t.knee_gain,
                t.ttft_plateau,
                t.min_change,
                t.send_lag_s,
                t.send_lag_fraction
            ),
            (0.2, 0.1, 3.0, 0.03, 0.05, 0.1)
        );
    }

    const PLAN: &str =
        "[experiment]\nname = \"t\"\nversion = 1\n[target]\nbase_url = \"sim:founding\"\n\
        [workload]\ninput_tokens = 1000\noutput_tokens = 500\ninput_tolerance = 0.02\n\
        input_tolerance_tokens = 3\n[analysis]\n";

    fn parse(analysis: &str) -> Result<qexp_plan::Plan, qexp_plan::PlanError> {
        let text = format!("{PLAN}{analysis}");
        qexp_plan::Plan::parse(std::path::Path::new("t.toml"), &text)
    }

    #[test]
    fn plan_keys_reach_the_thresholds() {
        let plan = parse("knee_gain = 0.1\nsend_lag_s = 0.02\n").map_err(|e| e.to_string());
        let t = plan.map(|p| Thresholds::from_plan_file(&p.file));
        let t = t
            .as_ref()
            .map(|t| (t.knee_gain, t.send_lag_s, t.cv, t.input_tolerance));
        let tolerance = qexp_plan::InputTolerance {
            share: 0.02,
            tokens: 3,
        };
        assert_eq!(t, Ok((0.1, 0.02, 0.10, tolerance)));
    }

    #[test]
    fn bad_plan_values_are_rejected() {
        for bad in [
            "knee_gain = 0.0",
            "min_change = 1.5",
            "send_lag_s = -1.0",
            "send_lag_fraction = -0.1",
            "knee = 0.05",
        ] {
            assert!(parse(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn send_lag_limit_is_the_larger_bound() {
        let t = Thresholds::default();
        assert_eq!(t.send_lag_limit(0.05), 0.010); // 5% of 50 ms = 2.5 ms < 10 ms floor
        assert!((t.send_lag_limit(61.0) - 3.05).abs() < 1e-12);
        assert_eq!(t.send_lag_limit(f64::NAN), 0.010);
    }

    #[test]
    fn rows_print_values_with_units() {
        let rows = Thresholds::default().rows();
        let get = |k: &str| rows.iter().find(|r| r.key == k).map(|r| r.value.clone());
        assert_eq!(get("analysis.cv_threshold").as_deref(), Some("10%"));
        assert_eq!(
            get("analysis.knee_gain").as_deref(),
            Some("5% per doubling")
        );
        assert_eq!(get("analysis.send_lag_s").as_deref(), Some("10 ms"));
    }

    #[test]
    fn origins_say_plan_default_or_fixed() {
        let text = format!("{PLAN}knee_gain = 0.1\n");
        let (t, source, plan) = Thresholds::of_recorded_plan("t.toml", &text);
        assert_eq!((t.knee_gain, source), (0.1, ThresholdSource::Plan));
        let rows = t.rows_for(plan.as_ref());
        let origin = |k: &str| rows.iter().find(|r| r.key == k).map(|r| r.origin);
        assert_eq!(origin("analysis.knee_gain"), Some(ThresholdOrigin::Plan));
        assert_eq!(
            origin("analysis.cv_threshold"),
            Some(ThresholdOrigin::Default)
        );
        assert_eq!(
            origin("workload.input_tolerance"),
            Some(ThresholdOrigin::Plan)
        );
        assert_eq!(
            origin("workload.input_tolerance_tokens"),
            Some(ThresholdOrigin::Plan)
        );
        assert_eq!(origin("(fixed) alpha"), Some(ThresholdOrigin::Fixed));
        assert_eq!(
            origin("(fixed) rate_shortfall"),
            Some(ThresholdOrigin::Fixed)
        );
    }

    #[test]
    fn a_plan_that_no_longer_parses_falls_back_with_the_reason() {
        let (t, source, plan) =
            Thresholds::of_recorded_plan("old.toml", "[experiment]\nname = 1\n");
        assert_eq!(t, Thresholds::default());
        assert!(plan.is_none());
        let ThresholdSource::Defaults { reason } = &source else {
            panic!("{source:?}");
        };
        assert!(
            reason.starts_with("the recorded plan no longer parses: ")
                && reason.contains("old.toml"),
            "{reason}"
        );
        let rows = t.rows_for(None);
        assert!(rows.iter().all(|r| r.origin != ThresholdOrigin::Plan));
    }
}
