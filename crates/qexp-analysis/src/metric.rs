//! The per-(trial, point) metrics qexp compares and checks, declared once:
//! each [`Metric`] has its key (`agg_tok_s`, also its serialised and
//! command-line name), its name in sentences, its label and unit, the
//! direction that counts as better, and where its values are. Anomaly
//! detection, `qexp diff` and the narrative's `metric()` all read this list.
//!
//! To add a metric: add a variant, put it in [`Metric::ALL`], and give it a
//! row in [`Metric::spec`] and in [`Metric::of_trial`] / [`Metric::summary`].

use crate::format;
use crate::metrics::{PointSummary, TrialMetrics};
use crate::stats::Summary;
use serde::Serialize;

/// Which way a metric improves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Throughput: more is better.
    HigherIsBetter,
    /// Latency, failures: less is better.
    LowerIsBetter,
}

/// The unit a metric's values are in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Tokens per second.
    TokS,
    /// Seconds.
    Seconds,
    /// A count of requests.
    Requests,
    /// A share of graded answers (0 to 1).
    Share,
    /// Joules per output token.
    JoulesPerToken,
    /// Dollars per million output tokens.
    UsdPerMillion,
    /// Requests per second.
    ReqS,
}

impl Unit {
    /// The unit as headers print it.
    pub fn symbol(self) -> &'static str {
        match self {
            Unit::TokS => "tok/s",
            Unit::Seconds => "s",
            Unit::Requests => "req",
            Unit::Share => "share",
            Unit::JoulesPerToken => "J/tok",
            Unit::UsdPerMillion => "$/1M tok",
            Unit::ReqS => "req/s",
        }
    }
}

/// A per-(trial, point) metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Aggregate output tok/s of a (trial, point).
    AggTokS,
    /// Per-request decode tok/s (1/TPOT), median over the trial's requests.
    DecodeTokS,
    /// Median TTFT of the trial, seconds.
    TtftS,
    /// Median E2E latency of the trial, seconds.
    E2eS,
    /// 99th percentile of the trial's pooled inter-chunk gaps, seconds.
    ItlP99S,
    /// Failed measured requests of the trial.
    Failures,
    /// Share of the trial's graded items answered right (`[accuracy]`).
    /// Not in [`Metric::ALL`]: a diff adds it where both sides graded items,
    /// compared on the same items by an exact McNemar test (`crate::accuracy`).
    Accuracy,
    /// GPU energy per output token of the trial (`[power]`). Not in
    /// [`Metric::ALL`]: a comparison adds it where both sides measured energy.
    JPerOutTok,
    /// Dollars per million output tokens of the trial (`[cost]`). Not in
    /// [`Metric::ALL`]: a comparison adds it where both sides have a price.
    UsdPerMOut,
    /// Output tok/s over the (trial, point)'s steady-state window
    /// (`crate::steady`; closed-loop points). Not in [`Metric::ALL`]: a
    /// diff compares it when asked (`--metric steady_tok_s`), window
    /// against window, never against a whole-point figure.
    SteadyTokS,
    /// Successful requests per second of a (trial, point). The throughput
    /// of APIs that answer once (embeddings, rerank): see
    /// [`Metric::of_api`].
    ReqS,
    /// Server-reported prompt tokens per second of a (trial, point).
    InputTokS,
}

/// What qexp knows about one [`Metric`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricSpec {
    /// snake_case key: serialised and command-line name.
    pub key: &'static str,
    /// Name in sentences ("aggregate throughput").
    pub name: &'static str,
    /// Column label with unit ("aggregate (tok/s)").
    pub label: &'static str,
    /// What a chart's value axis calls it, before the unit ("Aggregate output").
    pub axis: &'static str,
    /// Unit of its values.
    pub unit: Unit,
    /// Which way is better.
    pub direction: Direction,
}

impl Metric {
    /// Every metric, in display order (what `qexp diff` compares by default).
    pub const ALL: [Metric; 6] = [
        Metric::AggTokS,
        Metric::DecodeTokS,
        Metric::TtftS,
        Metric::E2eS,
        Metric::ItlP99S,
        Metric::Failures,
    ];

    /// What a token costs: compared wherever both sides have values.
    pub const COST: [Metric; 2] = [Metric::JPerOutTok, Metric::UsdPerMOut];

    /// Every metric's key, in display order.
    pub const NAMES: [&'static str; 6] = {
        let mut names = [""; 6];
        let mut i = 0;
        while i < names.len() {
            names[i] = Metric::ALL[i].spec().key;
            i += 1;
        }
        names
    };

    /// The metrics of a run against `api`, in display order: [`Metric::ALL`]
    /// for the streaming APIs; for embeddings and rerank, which answer
    /// once, requests/s, input tok/s, E2E and failures (no TTFT, TPOT or
    /// ITL: they would be E2E under another name).
    pub fn of_api(api: qexp_plan::ApiKind) -> &'static [Metric] {
        const ONCE: [Metric; 4] = [
            Metric::ReqS,
            Metric::InputTokS,
            Metric::E2eS,
            Metric::Failures,
        ];
        match api.streams() {
            true => &Metric::ALL,
            false => &ONCE,
        }
    }

    /// Metrics a diff compares only when asked by name.
    pub const ON_REQUEST: [Metric; 1] = [Metric::SteadyTokS];

    /// Every metric a diff can be asked for by name: [`Metric::ALL`],
    /// [`Metric::ON_REQUEST`], and the throughputs of APIs that answer once.
    pub const DIFFABLE: [Metric; 9] = [
        Metric::AggTokS,
        Metric::DecodeTokS,
        Metric::TtftS,
        Metric::E2eS,
        Metric::ItlP99S,
        Metric::Failures,
        Metric::SteadyTokS,
        Metric::ReqS,
        Metric::InputTokS,
    ];

    /// The keys of [`Metric::DIFFABLE`].
    pub const DIFF_NAMES: [&'static str; 9] = {
        let mut names = [""; 9];
        let mut i = 0;
        while i < names.len() {
            names[i] = Metric::DIFFABLE[i].spec().key;
            i += 1;
        }
        names
    };

    /// The metrics whose trials are checked for noise and outliers.
    pub const CHECKED: [Metric; 4] = [
        Metric::AggTokS,
        Metric::DecodeTokS,
        Metric::TtftS,
        Metric::E2eS,
    ];

    /// The metric's declaration.
    #[expect(
        clippy::too_many_lines,
        reason = "a declaration table, one arm per metric"
    )]
    pub const fn spec(self) -> MetricSpec {
        use Direction::{HigherIsBetter as Up, LowerIsBetter as Down};
        let (key, name, label, axis, unit, direction) = match self {
            Metric::AggTokS => (
                "agg_tok_s",
                "aggregate throughput",
                "aggregate (tok/s)",
                "Aggregate output",
                Unit::TokS,
                Up,
            ),
            Metric::DecodeTokS => (
                "decode_tok_s",
                "per-request decode rate",
                "decode/req (tok/s)",
                "Per-request decode",
                Unit::TokS,
                Up,
            ),
            Metric::TtftS => (
                "ttft_s",
                "TTFT",
                "TTFT (s)",
                "TTFT, median",
                Unit::Seconds,
                Down,
            ),
            Metric::E2eS => (
                "e2e_s",
                "E2E latency",
                "E2E (s)",
                "E2E, median",
                Unit::Seconds,
                Down,
            ),
            Metric::ItlP99S => (
                "itl_p99_s",
                "ITL p99",
                "ITL p99 (s)",
                "ITL p99",
                Unit::Seconds,
                Down,
            ),
            Metric::Failures => (
                "failures",
                "failed requests",
                "failures (req)",
                "Failed requests",
                Unit::Requests,
                Down,
            ),
            Metric::SteadyTokS => (
                "steady_tok_s",
                "steady-state throughput",
                "steady (tok/s)",
                "Output over the steady-state window",
                Unit::TokS,
                Up,
            ),
            Metric::ReqS => (
                "req_s",
                "request throughput",
                "requests (req/s)",
                "Requests",
                Unit::ReqS,
                Up,
            ),
            Metric::InputTokS => (
                "input_tok_s",
                "input throughput",
                "input (tok/s)",
                "Input tokens",
                Unit::TokS,
                Up,
            ),
            Metric::Accuracy => (
                "accuracy",
                "accuracy",
                "accuracy (share)",
                "Accuracy",
                Unit::Share,
                Up,
            ),
            Metric::JPerOutTok => (
                "j_per_out_tok",
                "energy per output token",
                "energy (J/tok)",
                "GPU energy per output token",
                Unit::JoulesPerToken,
                Down,
            ),
            Metric::UsdPerMOut => (
                "usd_per_m_out",
                "cost per million output tokens",
                "cost ($/1M tok)",
                "Cost per million output tokens",
                Unit::UsdPerMillion,
                Down,
            ),
        };
        MetricSpec {
            key,
            name,
            label,
            axis,
            unit,
            direction,
        }
    }

    /// The key (`agg_tok_s`, …): serialised and command-line name.
    pub fn key(self) -> &'static str {
        self.spec().key
    }

    /// The metric called `key`.
    pub fn from_key(key: &str) -> Option<Metric> {
        Self::ALL
            .into_iter()
            .chain([Metric::Accuracy])
            .chain(Metric::COST)
            .chain(Self::DIFFABLE)
            .find(|m| m.key() == key)
    }

    /// Name in sentences.
    pub fn name(self) -> &'static str {
        self.spec().name
    }

    /// Column label with unit.
    pub fn label(self) -> &'static str {
        self.spec().label
    }

    /// A chart's value-axis title: `Aggregate output (tok/s)`, or
    /// `TTFT, median (s, log scale)` on a log axis.
    pub fn axis_title(self, log: bool) -> String {
        let spec = self.spec();
        let scale = if log { ", log scale" } else { "" };
        format!("{} ({}{scale})", spec.axis, spec.unit.symbol())
    }

    /// Which way is better.
    pub fn direction(self) -> Direction {
        self.spec().direction
    }

    /// One trial's value (NaN when the trial has none).
    pub fn of_trial(self, t: &TrialMetrics) -> f64 {
        match self {
            Metric::AggTokS => t.agg_tok_s,
            Metric::DecodeTokS => t.decode_tok_s,
            Metric::TtftS => t.ttft_s,
            Metric::E2eS => t.e2e_s,
            Metric::ItlP99S => t.itl_p99_s,
            Metric::Failures => f64::from(t.failures),
            Metric::Accuracy => crate::graded::of_trial(&t.graded),
            Metric::JPerOutTok => t.energy.as_ref().map_or(f64::NAN, |e| e.j_per_out_tok),
            Metric::UsdPerMOut => t.energy.as_ref().map_or(f64::NAN, |e| e.usd_per_m_out),
            Metric::SteadyTokS => t.steady.as_ref().map_or(f64::NAN, |w| w.tok_s),
            Metric::ReqS => t.req_s(),
            Metric::InputTokS => t.input_tok_s(),
        }
    }

    /// The point's summary of this metric across trials, where it keeps one.
    pub fn summary(self, p: &PointSummary) -> Option<&Summary> {
        match self {
            Metric::AggTokS => p.agg_tok_s.as_ref(),
            Metric::DecodeTokS => p.decode_tok_s.as_ref(),
            Metric::TtftS => p.ttft_s.as_ref(),
            Metric::E2eS => p.e2e_s.as_ref(),
            Metric::ItlP99S => p.itl_p99_s.as_ref(),
            Metric::SteadyTokS => p.steady.as_ref().map(|s| &s.tok_s),
            Metric::ReqS => p.req_s.as_ref(),
            Metric::InputTokS => p.input_tok_s.as_ref(),
            Metric::Failures | Metric::Accuracy => None,
            Metric::JPerOutTok => p.energy.as_ref()?.j_per_out_tok.as_ref(),
            Metric::UsdPerMOut => p.energy.as_ref()?.usd_per_m_out.as_ref(),
        }
    }

    /// The point's per-trial values, in trial order.
    pub fn values(self, p: &PointSummary) -> Vec<f64> {
        p.trials.iter().map(|t| self.of_trial(t)).collect()
    }

    /// A value with its unit, e.g. `9.8 s`, `505 tok/s`.
    pub fn format(self, v: f64) -> String {
        match self.spec().unit {
            Unit::TokS => format::tok_s(v),
            Unit::Seconds => format::seconds(v),
            Unit::Requests => format!("{} requests", format::sig3(v)),
            Unit::Share => format::percent(v),
            Unit::JoulesPerToken => format!("{} J/tok", format::sig3(v)),
            Unit::UsdPerMillion => format!("${} per 1M tokens", format::sig3(v)),
            Unit::ReqS => format!("{} req/s", format::sig3(v)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_match_serde() {
        for m in Metric::ALL {
            assert_eq!(Metric::from_key(m.key()), Some(m));
            let json = serde_json::to_value(m).unwrap_or_default();
            assert_eq!(json, serde_json::Value::from(m.key()));
        }
        assert_eq!(Metric::NAMES.map(Metric::from_key), Metric::ALL.map(Some));
        assert_eq!(Metric::from_key("tok_s"), None);
        assert_eq!(Metric::from_key("steady_tok_s"), Some(Metric::SteadyTokS));
    }

    #[test]
    fn throughput_up_latency_down() {
        assert_eq!(Metric::AggTokS.direction(), Direction::HigherIsBetter);
        assert_eq!(Metric::DecodeTokS.direction(), Direction::HigherIsBetter);
        for m in [
            Metric::TtftS,
            Metric::E2eS,
            Metric::ItlP99S,
            Metric::Failures,
        ] {
            assert_eq!(m.direction(), Direction::LowerIsBetter, "{m:?}");
        }
    }

    #[test]
    fn axis_titles_carry_the_unit_and_the_scale() {
        assert_eq!(
            Metric::AggTokS.axis_title(false),
            "Aggregate output (tok/s)"
        );
        assert_eq!(
            Metric::TtftS.axis_title(true),
            "TTFT, median (s, log scale)"
        );
        for m in Metric::ALL {
            let unit = m.spec().unit.symbol();
            assert!(m.axis_title(false).ends_with(&format!("({unit})")), "{m:?}");
        }
    }

    #[test]
    fn labels_carry_the_unit() {
        for m in Metric::ALL {
            let unit = m.spec().unit.symbol();
            assert!(m.label().contains(&format!("({unit}")), "{}", m.label());
        }
    }
}
