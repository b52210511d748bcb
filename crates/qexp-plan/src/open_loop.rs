//! Open-loop load: requests sent at planned times (a rate, a schedule of
//! stages, or a replayed trace) instead of when a slot frees. The `[load]`
//! section of a plan and what one point of it carries into the run.

use serde::{Deserialize, Serialize};
use std::ops::Range;
use toml::Spanned;

use crate::error::Invalid;

/// How arrivals are spaced around the planned rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrival {
    /// Evenly spaced, exactly 1/rate apart.
    Constant,
    /// Exponential gaps (a Poisson process), as independent users produce.
    #[default]
    Poisson,
    /// Gamma-distributed gaps with shape `burstiness`: 1 is Poisson, below 1 burstier, above 1 more regular.
    Gamma,
}

impl Arrival {
    /// The plan's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Arrival::Constant => "constant",
            Arrival::Poisson => "poisson",
            Arrival::Gamma => "gamma",
        }
    }
}

/// `[load]`: open-loop arrivals. Absent, every point is closed-loop.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadSection {
    /// `constant`, `poisson` (default) or `gamma`.
    #[serde(default)]
    pub arrival: Arrival,
    /// Gamma shape for `arrival = "gamma"` (default 1, i.e. Poisson-like).
    #[serde(default)]
    pub burstiness: Option<Spanned<f64>>,
    /// Most requests in flight; an arrival beyond it waits, and the wait counts in its response time.
    #[serde(default)]
    pub max_in_flight: Option<Spanned<u32>>,
    /// Seconds of arrivals per rate point (rate × duration_s requests); default `run.requests`.
    #[serde(default)]
    pub duration_s: Option<Spanned<f64>>,
    /// A schedule of steps run in order inside one point: ramps and spikes.
    #[serde(default)]
    pub stages: Option<Spanned<Vec<StageSpec>>>,
    /// Replay of a recorded trace.
    #[serde(default)]
    pub trace: Option<TraceSpec>,
}

/// One `[[load.stages]]` step: a rate held for a duration or a request count.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StageSpec {
    /// Requests per second during the step.
    pub rate: f64,
    /// Seconds the step lasts (becomes rate × duration_s requests).
    #[serde(default)]
    pub duration_s: Option<f64>,
    /// Requests the step sends.
    #[serde(default)]
    pub requests: Option<u32>,
}

/// `[load.trace]`: send at a recorded file's offsets.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceSpec {
    /// CSV or JSONL with `offset_s`, `input_tokens`, `output_tokens`; relative to the plan file.
    pub path: Spanned<String>,
    /// Replay speed: 2 sends twice as fast (offsets divided by 2).
    #[serde(default = "one")]
    pub speed: Spanned<f64>,
}

fn one() -> Spanned<f64> {
    Spanned::new(0..0, 1.0)
}

/// A step of a point's schedule, as planned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stage {
    /// Requests per second.
    pub rate: f64,
    /// Requests sent in this step.
    pub requests: u32,
}

/// A trace a point replays; the runner re-reads it and checks the hash.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceRef {
    /// The file, resolved against the plan's folder.
    pub path: String,
    /// Replay speed factor.
    pub speed: f64,
    /// SHA-256 of the file as read when the plan was loaded.
    pub sha256: String,
    /// Offset of the last entry divided by the speed: the planned length, seconds.
    pub span_s: f64,
    /// Entries (requests) in the trace.
    pub requests: u32,
}

/// The open-loop part of a point: when its requests are due.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpenLoop {
    /// How gaps are drawn (ignored for a trace, whose offsets are given).
    pub arrival: Arrival,
    /// Gamma shape (1 for other arrivals).
    pub burstiness: f64,
    /// Cap on requests in flight, if any.
    pub max_in_flight: Option<u32>,
    /// Steps in order; empty for a trace.
    pub stages: Vec<Stage>,
    /// The replayed trace, if any.
    pub trace: Option<TraceRef>,
}

impl OpenLoop {
    /// The load's shape as an explicit, stable string (arrival process, cap,
    /// steps, trace content): what two points must share to be compared.
    pub fn fingerprint(&self) -> String {
        let stages: Vec<String> = self
            .stages
            .iter()
            .map(|s| format!("{}/s*{}", s.rate, s.requests))
            .collect();
        let cap = self
            .max_in_flight
            .map_or_else(|| "none".to_string(), |c| c.to_string());
        let trace = self.trace.as_ref().map_or_else(
            || "none".to_string(),
            |t| format!("{}@{}", t.sha256, t.speed),
        );
        format!(
            "arrival={} burstiness={} max_in_flight={cap} stages={} trace={trace}",
            self.arrival.as_str(),
            self.burstiness,
            stages.join(",")
        )
    }

    /// Planned mean rate, requests per second: requests over planned span.
    pub fn rate(&self) -> f64 {
        if let Some(t) = &self.trace {
            return if t.span_s > 0.0 {
                f64::from(t.requests) / t.span_s
            } else {
                0.0
            };
        }
        let n: u32 = self.stages.iter().map(|s| s.requests).sum();
        let span: f64 = self
            .stages
            .iter()
            .map(|s| f64::from(s.requests) / s.rate)
            .sum();
        if span > 0.0 {
            f64::from(n) / span
        } else {
            0.0
        }
    }
}

fn invalid<T>(span: Range<usize>, key: &str, msg: impl Into<String>) -> Result<T, Invalid> {
    Err((span, Some(key.to_string()), msg.into()))
}

fn positive(x: f64) -> bool {
    x.is_finite() && x > 0.0
}

/// `sweep.rate`, when given, is a non-empty list of positive rates.
fn check_rates(rates: Option<&Spanned<Vec<f64>>>) -> Result<(), Invalid> {
    if let Some(r) = rates {
        if r.get_ref().is_empty() {
            return invalid(
                r.span(),
                "sweep.rate",
                "the list is empty; give at least one rate",
            );
        }
        if !r.get_ref().iter().all(|x| positive(*x)) {
            return invalid(
                r.span(),
                "sweep.rate",
                "rates must be positive requests per second",
            );
        }
    }
    Ok(())
}

impl LoadSection {
    /// True when the plan asks for open-loop load at all.
    pub fn is_open(&self, sweep_rate: bool) -> bool {
        sweep_rate || self.stages.is_some() || self.trace.is_some()
    }

    /// Checks ranges and combinations; `rates` is `sweep.rate`, `conc` whether `sweep.concurrency` is set.
    pub(crate) fn validate(
        &self,
        rates: Option<&Spanned<Vec<f64>>>,
        conc: Option<Range<usize>>,
    ) -> Result<(), Invalid> {
        check_rates(rates)?;
        self.check_one_schedule(rates, conc)?;
        self.check_knobs(rates.is_some())?;
        self.check_stages()?;
        self.check_trace()
    }

    /// At most one of `sweep.rate`, `load.stages` and `load.trace`, not with
    /// `sweep.concurrency`; without any, none of the keys only they use.
    fn check_one_schedule(
        &self,
        rates: Option<&Spanned<Vec<f64>>>,
        conc: Option<Range<usize>>,
    ) -> Result<(), Invalid> {
        let given = [
            rates.map(|r| ("sweep.rate", r.span())),
            self.stages.as_ref().map(|s| ("load.stages", s.span())),
            self.trace.as_ref().map(|t| ("load.trace", t.path.span())),
        ];
        let given: Vec<_> = given.into_iter().flatten().collect();
        if given.len() > 1 {
            return invalid(
                given[1].1.clone(),
                given[1].0,
                format!(
                    "`{}` and `{}` both say when requests are sent; keep one",
                    given[0].0, given[1].0
                ),
            );
        }
        if let (Some((key, _)), Some(span)) = (given.first(), conc) {
            return invalid(
                span,
                "sweep.concurrency",
                format!("concurrency is closed-loop load and `{key}` open-loop; use `load.max_in_flight` to cap requests in flight"),
            );
        }
        if given.is_empty() {
            // Nothing open-loop: the other keys would be silently ignored.
            let stray = [
                self.burstiness
                    .as_ref()
                    .map(|b| ("load.burstiness", b.span())),
                self.max_in_flight
                    .as_ref()
                    .map(|m| ("load.max_in_flight", m.span())),
                self.duration_s
                    .as_ref()
                    .map(|d| ("load.duration_s", d.span())),
            ];
            if let Some((key, span)) = stray.into_iter().flatten().next() {
                return invalid(
                    span,
                    key,
                    "has no effect without `sweep.rate`, `load.stages` or `load.trace`",
                );
            }
        }
        Ok(())
    }

    /// `load.burstiness`, `load.max_in_flight` and `load.duration_s` in range,
    /// each with the schedule it applies to; `rates`: `sweep.rate` is given.
    fn check_knobs(&self, rates: bool) -> Result<(), Invalid> {
        if let Some(b) = &self.burstiness {
            if !positive(*b.get_ref()) {
                return invalid(
                    b.span(),
                    "load.burstiness",
                    "must be a positive number, e.g. 0.5 (bursty) or 1 (Poisson)",
                );
            }
            if self.arrival != Arrival::Gamma {
                return invalid(
                    b.span(),
                    "load.burstiness",
                    "applies to `arrival = \"gamma\"` only",
                );
            }
        }
        if let Some(m) = &self.max_in_flight {
            if *m.get_ref() == 0 {
                return invalid(m.span(), "load.max_in_flight", "must be at least 1");
            }
        }
        if let Some(d) = &self.duration_s {
            if !positive(*d.get_ref()) {
                return invalid(
                    d.span(),
                    "load.duration_s",
                    "must be a positive number of seconds",
                );
            }
            if !rates {
                return invalid(
                    d.span(),
                    "load.duration_s",
                    "applies to `sweep.rate` points; give each stage its own `duration_s`",
                );
            }
        }
        Ok(())
    }

    /// Every stage has a positive rate and one positive length.
    fn check_stages(&self) -> Result<(), Invalid> {
        if let Some(stages) = &self.stages {
            if stages.get_ref().is_empty() {
                return invalid(stages.span(), "load.stages", "give at least one stage");
            }
            for (i, s) in stages.get_ref().iter().enumerate() {
                let key = format!("load.stages[{i}]");
                if !positive(s.rate) {
                    return invalid(
                        stages.span(),
                        &key,
                        "`rate` must be positive requests per second",
                    );
                }
                match (s.duration_s, s.requests) {
                    (Some(d), None) if positive(d) => {}
                    (None, Some(n)) if n > 0 => {}
                    (Some(_), Some(_)) => {
                        return invalid(
                            stages.span(),
                            &key,
                            "give `duration_s` or `requests`, not both",
                        )
                    }
                    _ => {
                        return invalid(
                            stages.span(),
                            &key,
                            "needs a positive `duration_s` or `requests`",
                        )
                    }
                }
            }
        }
        Ok(())
    }

    /// The trace's speed is a positive factor.
    fn check_trace(&self) -> Result<(), Invalid> {
        if let Some(t) = &self.trace {
            if !positive(*t.speed.get_ref()) {
                return invalid(
                    t.speed.span(),
                    "load.trace.speed",
                    "must be a positive factor, e.g. 1 or 2.5",
                );
            }
        }
        Ok(())
    }

    /// The open-loop part of a rate point sending `requests` at `rate`.
    pub(crate) fn at_rate(&self, rate: f64, requests: u32) -> OpenLoop {
        self.with_stages(vec![Stage { rate, requests }], None)
    }

    /// The planned stages, durations turned into request counts.
    pub(crate) fn stages(&self) -> Vec<Stage> {
        self.stages
            .as_ref()
            .map(|s| {
                s.get_ref()
                    .iter()
                    .map(|s| Stage {
                        rate: s.rate,
                        requests: s
                            .requests
                            .unwrap_or_else(|| requests_for(s.rate, s.duration_s.unwrap_or(0.0))),
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    pub(crate) fn with_stages(&self, stages: Vec<Stage>, trace: Option<TraceRef>) -> OpenLoop {
        OpenLoop {
            arrival: self.arrival,
            burstiness: self.burstiness.as_ref().map_or(1.0, |b| *b.get_ref()),
            max_in_flight: self.max_in_flight.as_ref().map(|m| *m.get_ref()),
            stages,
            trace,
        }
    }
}

/// Requests a rate sends in a duration, at least one.
pub(crate) fn requests_for(rate: f64, duration_s: f64) -> u32 {
    (rate * duration_s).round().clamp(1.0, f64::from(u32::MAX)) as u32
}
