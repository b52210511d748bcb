//! Service-level objectives: `ttft_p90=2s,tpot=50ms` (each metric at most).

use crate::file::ModelMetric;

/// Upper limits on time metrics, all of which must hold.
#[derive(Debug, Clone, PartialEq)]
pub struct Slo {
    /// Metric and its limit, seconds.
    pub limits: Vec<(ModelMetric, f64)>,
}

/// An SLO that does not parse.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("--slo `{given}`: {why} (e.g. ttft_p90=2s,tpot=50ms; metrics: ttft, ttft_p90, tpot, e2e; units s or ms)")]
pub struct SloError {
    /// The text given.
    pub given: String,
    /// What is wrong.
    pub why: String,
}

impl Slo {
    /// Parses `metric=value[unit],…`.
    pub fn parse(s: &str) -> Result<Slo, SloError> {
        let err = |why: String| SloError {
            given: s.to_owned(),
            why,
        };
        let mut limits = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, value) = part
                .split_once('=')
                .ok_or_else(|| err(format!("`{part}` is not metric=value")))?;
            let metric = ModelMetric::ALL
                .into_iter()
                .filter(|m| m.is_time())
                .find(|m| m.name() == name.trim())
                .ok_or_else(|| err(format!("unknown metric `{name}`")))?;
            let v = value.trim();
            let (num, scale) = if let Some(n) = v.strip_suffix("ms") {
                (n, 1e-3)
            } else if let Some(n) = v.strip_suffix('s') {
                (n, 1.0)
            } else {
                return Err(err(format!("`{v}` has no unit: write {v}s or {v}ms")));
            };
            let x: f64 = num
                .trim()
                .parse()
                .ok()
                .filter(|x: &f64| x.is_finite() && *x > 0.0)
                .ok_or_else(|| err(format!("`{value}` is not a positive time")))?;
            limits.push((metric, x * scale));
        }
        if limits.is_empty() {
            return Err(err("no limits".to_owned()));
        }
        Ok(Slo { limits })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units_and_refuses_nonsense() {
        let s = Slo::parse("ttft_p90=2s, tpot=50ms,e2e=3s").unwrap();
        assert_eq!(
            s.limits,
            vec![
                (ModelMetric::TtftP90S, 2.0),
                (ModelMetric::TpotS, 0.05),
                (ModelMetric::E2eS, 3.0)
            ]
        );
        for bad in [
            "",
            "ttft",
            "agg_tok_s=5",
            "ttft=-1s",
            "ttft=fast",
            "nope=1s",
        ] {
            assert!(Slo::parse(bad).is_err(), "{bad}");
        }
        // A bare number could mean seconds or milliseconds: the unit is
        // required, as docs/model.md says.
        let e = Slo::parse("ttft_p90=2").unwrap_err().to_string();
        assert!(e.contains("`2` has no unit: write 2s or 2ms"), "{e}");
    }
}
