//! What a token costs, per (trial, point): the energy its point row holds
//! (qexp-power measured it, with a reason where the samples could not be
//! trusted) over the tokens it served, and, with a `[cost]` price in the
//! recorded plan, dollars per million tokens. Output tokens are the
//! server-reported completion tokens of the successful requests (the
//! point row's `output_tokens`); total tokens add their prompt tokens.

use crate::columns::{f64s, F};
use crate::error::AnalysisError;
use crate::stats::Summary;
use polars::prelude::*;
use qexp_store::{points as pt, scan_points, Manifest};
use qexp_types::cost::{Price, Spent};
use serde::Serialize;
use std::path::Path;

/// One (trial, point)'s energy, power, GPU health and cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TrialEnergy {
    /// GPUs measured (or rented, `cost.gpus`).
    pub gpus: Option<u32>,
    /// Trusted energy over the window, J (NaN when absent or invalid).
    pub energy_j: f64,
    /// Mean power of the GPUs together, W.
    pub power_avg_w: f64,
    /// The window, s.
    pub window_s: f64,
    /// J per output token.
    pub j_per_out_tok: f64,
    /// J per token, prompt and output.
    pub j_per_tok: f64,
    /// Output tokens per J.
    pub out_tok_per_j: f64,
    /// Aggregate output tok/s per W of mean power.
    pub tok_s_per_w: f64,
    /// $ per 1M output tokens (NaN without a price, or an energy price without energy).
    pub usd_per_m_out: f64,
    /// $ per 1M tokens, prompt and output.
    pub usd_per_m_tok: f64,
    /// Why the energy is not trusted.
    pub invalid_reason: Option<String>,
    /// A remark on the energy (the two methods disagree).
    pub note: Option<String>,
    /// Largest share of the window a GPU was power-capped (NaN: not sampled).
    pub power_capped_share: f64,
    /// Largest share of the window a GPU was held back by temperature.
    pub thermal_share: f64,
    /// Lowest and highest SM clock in the window, MHz.
    pub sm_clock_mhz: (f64, f64),
}

/// A point's energy and cost across trials.
#[derive(Debug, Clone, Default, Serialize)]
pub struct EnergySummary {
    /// Energy per trial, J.
    pub energy_j: Option<Summary>,
    /// Mean power, W.
    pub power_avg_w: Option<Summary>,
    /// J per output token.
    pub j_per_out_tok: Option<Summary>,
    /// J per token.
    pub j_per_tok: Option<Summary>,
    /// Output tokens per J.
    pub out_tok_per_j: Option<Summary>,
    /// tok/s per W.
    pub tok_s_per_w: Option<Summary>,
    /// $ per 1M output tokens.
    pub usd_per_m_out: Option<Summary>,
    /// $ per 1M tokens.
    pub usd_per_m_tok: Option<Summary>,
    /// Trials whose energy was invalid, with the reason.
    pub invalid: Vec<(u32, String)>,
    /// Trials whose two energy figures disagree by more than 5%, with the note.
    pub notes: Vec<(u32, String)>,
    /// The largest power-capped share of any trial.
    pub power_capped_share: Option<f64>,
    /// The largest thermal share of any trial.
    pub thermal_share: Option<f64>,
}

impl EnergySummary {
    /// The summary of a point's trials' energies, each with its trial;
    /// `None` when none has energy or cost.
    pub fn of<'a>(
        trials: impl IntoIterator<Item = (u32, &'a TrialEnergy)>,
    ) -> Option<EnergySummary> {
        let trials: Vec<(u32, &TrialEnergy)> = trials.into_iter().collect();
        let e: Vec<&TrialEnergy> = trials.iter().map(|(_, t)| *t).collect();
        if e.is_empty() {
            return None;
        }
        let of =
            |f: fn(&TrialEnergy) -> f64| Summary::of(&e.iter().map(|t| f(t)).collect::<Vec<_>>());
        let max = |f: fn(&TrialEnergy) -> f64| {
            e.iter()
                .map(|t| f(t))
                .filter(|v| v.is_finite())
                .reduce(f64::max)
        };
        Some(EnergySummary {
            energy_j: of(|t| t.energy_j),
            power_avg_w: of(|t| t.power_avg_w),
            j_per_out_tok: of(|t| t.j_per_out_tok),
            j_per_tok: of(|t| t.j_per_tok),
            out_tok_per_j: of(|t| t.out_tok_per_j),
            tok_s_per_w: of(|t| t.tok_s_per_w),
            usd_per_m_out: of(|t| t.usd_per_m_out),
            usd_per_m_tok: of(|t| t.usd_per_m_tok),
            invalid: trials
                .iter()
                .filter_map(|(trial, t)| Some((*trial, t.invalid_reason.clone()?)))
                .collect(),
            notes: trials
                .iter()
                .filter_map(|(trial, t)| Some((*trial, t.note.clone()?)))
                .collect(),
            power_capped_share: max(|t| t.power_capped_share),
            thermal_share: max(|t| t.thermal_share),
        })
    }
}

/// The price the recorded plan's `[cost]` gives, and the GPUs it rents
/// where `[power]` does not count them.
pub(crate) fn price(manifest: &Manifest) -> Option<(Price, Option<u32>)> {
    let c = qexp_plan::CostSection::from_plan_text(&manifest.plan_text)?;
    let price = match (c.gpu_hour_usd, c.kwh_usd) {
        (Some(usd), None) => Price::GpuHour { usd },
        (None, Some(usd_per_kwh)) => Price::Energy {
            usd_per_kwh,
            pue: c.pue.unwrap_or(1.0),
        },
        _ => return None,
    };
    Some((price, c.gpus))
}

/// The point-row columns [`add`] reads as numbers, in the order its row
/// loop indexes them.
const NUMBERS: [&str; 12] = [
    pt::TRIAL,
    pt::POINT_ID,
    pt::WINDOW_START_UNIX_S,
    pt::WINDOW_END_UNIX_S,
    pt::OUTPUT_TOKENS,
    pt::GPUS,
    pt::ENERGY_J,
    pt::POWER_AVG_W,
    pt::GPU_POWER_CAPPED_SHARE,
    pt::GPU_THERMAL_SHARE,
    pt::GPU_SM_CLOCK_MIN_MHZ,
    pt::GPU_SM_CLOCK_MAX_MHZ,
];

/// What [`add`] selects from the point rows: [`NUMBERS`] as floats, then the
/// energy's invalid reason and note as text. A column a run made before it
/// existed lacks reads as NaN (numbers) or null (text).
fn selection(schema: &Schema) -> Vec<Expr> {
    let or_nan = |name: &str| {
        if schema.contains(name) {
            col(name).cast(F)
        } else {
            lit(f64::NAN).alias(name)
        }
    };
    let or_null = |name: &str| {
        if schema.contains(name) {
            col(name).cast(DataType::String)
        } else {
            lit(NULL).cast(DataType::String).alias(name)
        }
    };
    let mut select: Vec<Expr> = NUMBERS.iter().map(|n| or_nan(n)).collect();
    select.extend([or_null(pt::ENERGY_INVALID_REASON), or_null(pt::ENERGY_NOTE)]);
    select
}

/// A text column; nulls stay `None`.
fn strings(df: &DataFrame, name: &str) -> PolarsResult<Vec<Option<String>>> {
    Ok(df
        .column(name)?
        .str()?
        .iter()
        .map(|s| s.map(str::to_string))
        .collect())
}

/// A (trial, point)'s energy, keyed by (point id, trial) as the analysis
/// keeps its trials' metrics.
type Energies = Vec<((u32, u32), TrialEnergy)>;

/// Each (trial, point)'s energy and cost from the point rows, where the run measured power or its plan names a price;
/// `measured` gives a (trial, point)'s prompt tokens and throughput, and a
/// row it knows nothing of is left out.
pub(crate) fn of_points(
    dir: &Path,
    manifest: &Manifest,
    measured: impl Fn((u32, u32)) -> Option<Measured>,
) -> Result<Energies, AnalysisError> {
    let q = |source| AnalysisError::Query {
        path: dir.to_path_buf(),
        source,
    };
    let mut scan = scan_points(dir)?;
    let schema = scan.collect_schema().map_err(q)?;
    let priced = price(manifest);
    if !schema.contains(pt::ENERGY_J) && priced.is_none() {
        return Ok(Vec::new());
    }
    let df = scan.select(selection(&schema)).collect().map_err(q)?;
    let cols: Vec<Vec<f64>> = NUMBERS
        .iter()
        .map(|n| f64s(&df, n))
        .collect::<PolarsResult<_>>()
        .map_err(q)?;
    let (why, note) = (
        strings(&df, pt::ENERGY_INVALID_REASON).map_err(q)?,
        strings(&df, pt::ENERGY_NOTE).map_err(q)?,
    );
    let mut out = Vec::new();
    for i in 0..df.height() {
        let v = |c: usize| cols[c][i];
        let key = (v(1) as u32, v(0) as u32);
        let Some(m) = measured(key) else {
            continue;
        };
        let gpus = Some(v(5))
            .filter(|g| g.is_finite())
            .map(|g| g as u32)
            .or(priced.and_then(|(_, g)| g));
        let row = Row {
            window_s: v(3) - v(2),
            output: v(4),
            gpus,
            energy_j: v(6),
            power_avg_w: v(7),
        };
        let mut e = row.derive(&m, priced.map(|(p, _)| p));
        e.invalid_reason = why[i].clone();
        e.note = note[i].clone();
        e.power_capped_share = v(8);
        e.thermal_share = v(9);
        e.sm_clock_mhz = (v(10), v(11));
        out.push((key, e));
    }
    Ok(out)
}

/// What the requests of a (trial, point) measured that its energy is
/// divided by.
pub(crate) struct Measured {
    /// Prompt tokens of its successful requests.
    pub prompt_tokens_ok: f64,
    /// Its aggregate output tokens per second.
    pub agg_tok_s: f64,
}

/// What one point row says, read.
struct Row {
    window_s: f64,
    output: f64,
    gpus: Option<u32>,
    energy_j: f64,
    power_avg_w: f64,
}

impl Row {
    /// The derived figures of a (trial, point) (`m` gives its prompt tokens and throughput).
    fn derive(&self, m: &Measured, price: Option<Price>) -> TrialEnergy {
        let total = self.output + m.prompt_tokens_ok;
        let per = |num: f64, den: f64| if den > 0.0 { num / den } else { f64::NAN };
        let spent = Spent {
            seconds: self.window_s,
            gpus: self.gpus.unwrap_or(0),
            energy_j: Some(self.energy_j).filter(|e| e.is_finite()),
        };
        let usd = |tokens: f64| {
            price
                .filter(|_| self.gpus.is_some())
                .and_then(|p| p.usd_per_million(&spent, tokens))
                .unwrap_or(f64::NAN)
        };
        TrialEnergy {
            gpus: self.gpus,
            energy_j: self.energy_j,
            power_avg_w: self.power_avg_w,
            window_s: self.window_s,
            j_per_out_tok: per(self.energy_j, self.output),
            j_per_tok: per(self.energy_j, total),
            out_tok_per_j: per(self.output, self.energy_j),
            tok_s_per_w: per(m.agg_tok_s, self.power_avg_w),
            usd_per_m_out: usd(self.output),
            usd_per_m_tok: usd(total),
            ..TrialEnergy::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2 GPUs, 90 s, 54,000 J, 45,000 output and 15,000 prompt tokens at
    /// 500 tok/s and 600 W: 1.2 J per output token, 0.9 J per token, 0.833
    /// output tokens per J, 0.833 tok/s per W; at $2 per GPU-hour ($0.10)
    /// $2.222 per 1M output and $1.667 per 1M tokens; at $0.15/kWh × PUE
    /// 1.2 ($0.0027) $0.06 and $0.045.
    #[test]
    fn derived_figures_by_hand() {
        let m = Measured {
            agg_tok_s: 500.0,
            prompt_tokens_ok: 15_000.0,
        };
        let row = Row {
            window_s: 90.0,
            output: 45_000.0,
            gpus: Some(2),
            energy_j: 54_000.0,
            power_avg_w: 600.0,
        };
        let e = row.derive(&m, Some(Price::GpuHour { usd: 2.0 }));
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9 * b.abs().max(1.0);
        assert!(close(e.j_per_out_tok, 1.2) && close(e.j_per_tok, 0.9));
        assert!(close(e.out_tok_per_j, 45_000.0 / 54_000.0));
        assert!(close(e.tok_s_per_w, 500.0 / 600.0));
        assert!(close(e.usd_per_m_out, 0.1 / 45_000.0 * 1e6));
        assert!(close(e.usd_per_m_tok, 0.1 / 60_000.0 * 1e6));
        let e = row.derive(
            &m,
            Some(Price::Energy {
                usd_per_kwh: 0.15,
                pue: 1.2,
            }),
        );
        assert!(close(e.usd_per_m_out, 0.06) && close(e.usd_per_m_tok, 0.045));
        let e = row.derive(&m, None);
        assert!(e.usd_per_m_out.is_nan());
        let invalid = Row {
            energy_j: f64::NAN,
            ..row
        };
        let e = invalid.derive(
            &m,
            Some(Price::Energy {
                usd_per_kwh: 0.15,
                pue: 1.2,
            }),
        );
        assert!(e.j_per_out_tok.is_nan() && e.usd_per_m_out.is_nan());
        // Rent does not need the energy.
        let e = invalid.derive(&m, Some(Price::GpuHour { usd: 2.0 }));
        assert!(close(e.usd_per_m_out, 0.1 / 45_000.0 * 1e6));
    }
}
