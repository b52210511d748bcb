//! Whether prefills queue, learned from the runs (docs/model.md
//! "Fitting", step 4): the forms the fit tries, each replayed on every
//! point, and the evidence for the one it keeps.

use crate::params::{Params, Schedule};
use serde::{Deserialize, Serialize};

/// How a prompt meets the other requests on its way to its first token:
/// the three forms the fit chooses between.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PrefillForm {
    /// Separate schedule, one prefill at a time: prompts wait for each other.
    Queued,
    /// Separate schedule, several prefills at once (up to a limit, or none):
    /// prompts run beside each other.
    Parallel,
    /// The mixed schedule: prompts prefilled in the decode step.
    Mixed,
}

impl PrefillForm {
    /// Every form, in the order the fit prefers them on a tie.
    pub const ALL: [PrefillForm; 3] = [
        PrefillForm::Queued,
        PrefillForm::Parallel,
        PrefillForm::Mixed,
    ];

    /// The form of `p`.
    pub fn of(p: &Params) -> PrefillForm {
        match (p.schedule, p.prefill_units) {
            (Schedule::Mixed, _) => PrefillForm::Mixed,
            (Schedule::Separate, Some(1)) => PrefillForm::Queued,
            (Schedule::Separate, _) => PrefillForm::Parallel,
        }
    }

    /// Its name in output and the model file.
    pub fn name(self) -> &'static str {
        match self {
            PrefillForm::Queued => "queued",
            PrefillForm::Parallel => "parallel",
            PrefillForm::Mixed => "mixed",
        }
    }

    /// What it means, in a few words.
    pub fn meaning(self) -> &'static str {
        match self {
            PrefillForm::Queued => "prefills wait for each other (one at a time)",
            PrefillForm::Parallel => "prefills run beside each other",
            PrefillForm::Mixed => "prompts prefilled in the decode step",
        }
    }
}

/// The form of `p` with its prefill limit, for output: `parallel (up to 2)`.
pub fn form_label(p: &Params) -> String {
    let form = PrefillForm::of(p);
    match (form, p.prefill_units) {
        (PrefillForm::Parallel, Some(k)) => format!("{} (up to {k} at once)", form.name()),
        (PrefillForm::Parallel, None) => format!("{} (no limit)", form.name()),
        _ => form.name().to_owned(),
    }
}

/// One form's best replay error over the measured medians.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FormError {
    /// The form.
    pub form: PrefillForm,
    /// Its sum of squared log errors (TTFT, TPOT, aggregate) at its best
    /// batch limit, prefill limit and intake window.
    pub error: f64,
}

/// Which form the fit kept and how strongly the runs say so: every form
/// tried, with its error; the kept one has the least.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FormEvidence {
    /// The form kept.
    pub chosen: PrefillForm,
    /// Every form tried (the kept one included), in [`PrefillForm::ALL`] order.
    pub tried: Vec<FormError>,
}

impl FormEvidence {
    /// The kept form's error, and the best other form with its error.
    fn ends(&self) -> Option<(f64, FormError)> {
        let mine = self.tried.iter().find(|e| e.form == self.chosen)?.error;
        let other = self
            .tried
            .iter()
            .filter(|e| e.form != self.chosen)
            .min_by(|a, b| a.error.total_cmp(&b.error))?;
        Some((mine, *other))
    }

    /// How many times the runner-up's error is the kept form's (∞ when
    /// the kept form explains the medians exactly); None with one form tried.
    pub fn ratio(&self) -> Option<f64> {
        let (mine, other) = self.ends()?;
        Some(if mine > 0.0 {
            other.error / mine
        } else if other.error > 0.0 {
            f64::INFINITY
        } else {
            1.0
        })
    }

    /// The evidence in one sentence.
    pub fn sentence(&self) -> String {
        let Some((mine, other)) = self.ends() else {
            return format!("{} (the only form tried)", self.chosen.name());
        };
        let ratio = self.ratio().unwrap_or(1.0);
        let strength = if ratio >= 3.0 {
            "clearly"
        } else if ratio >= 1.3 {
            "moderately"
        } else {
            "barely: the runs hardly tell them apart"
        };
        let times = if ratio.is_finite() {
            format!("{ratio:.1}×")
        } else {
            "infinitely".to_owned()
        };
        format!(
            "{} over {}, {strength} (the runner-up's squared log error {:.3} is {times} the kept form's {:.3})",
            self.chosen.name(),
            other.form.name(),
            other.error,
            mine
        )
    }
}

/// A form to try: its schedule, intake window and prefill limit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Form {
    pub schedule: Schedule,
    pub intake_s: f64,
    pub prefill_units: Option<u32>,
}

impl Form {
    /// `base` in this form.
    pub fn apply(self, base: Params) -> Params {
        Params {
            schedule: self.schedule,
            intake_s: self.intake_s,
            prefill_units: self.prefill_units,
            ..base
        }
    }

    /// The form `p` is in.
    pub fn of(p: &Params) -> Form {
        Form {
            schedule: p.schedule,
            intake_s: p.intake_s,
            prefill_units: p.prefill_units,
        }
    }
}

/// The forms to try on `schedules`: on the separate one, prefills one at a
/// time, then up to 2, 4, 8, … at once below `c_max` (when `parallel`),
/// then without a limit; on the mixed one each intake window (or the one
/// given). The order is the tie order: the first form wins a tie.
pub(super) fn candidates(
    schedules: &[Schedule],
    intake_s: Option<f64>,
    parallel: bool,
    c_max: u32,
) -> Vec<Form> {
    let mut out = Vec::new();
    for &schedule in schedules {
        match schedule {
            Schedule::Separate => {
                let mut units = vec![Some(1)];
                if parallel {
                    let mut k = 2;
                    while k < c_max {
                        units.push(Some(k));
                        k *= 2;
                    }
                    units.push(None);
                }
                out.extend(units.into_iter().map(|prefill_units| Form {
                    schedule,
                    intake_s: crate::INTAKE_S,
                    prefill_units,
                }));
            }
            Schedule::Mixed => {
                let windows = intake_s.map_or(vec![crate::INTAKE_S, 0.0], |w| vec![w]);
                out.extend(windows.into_iter().map(|intake_s| Form {
                    schedule,
                    intake_s,
                    prefill_units: Some(1),
                }));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn evidence(errors: [f64; 3], chosen: PrefillForm) -> FormEvidence {
        FormEvidence {
            chosen,
            tried: PrefillForm::ALL
                .into_iter()
                .zip(errors)
                .map(|(form, error)| FormError { form, error })
                .collect(),
        }
    }

    #[test]
    fn the_sentence_names_the_runner_up_and_the_strength() {
        let e = evidence([0.9, 0.1, 0.5], PrefillForm::Parallel);
        assert_eq!(e.ratio(), Some(5.0));
        let s = e.sentence();
        assert!(s.starts_with("parallel over mixed, clearly"), "{s}");
        let close = evidence([0.11, 0.1, 0.5], PrefillForm::Parallel);
        assert!(close.sentence().contains("barely"), "{}", close.sentence());
        let exact = evidence([0.2, 0.0, 0.5], PrefillForm::Parallel);
        assert_eq!(exact.ratio(), Some(f64::INFINITY));
        let alone = FormEvidence {
            chosen: PrefillForm::Queued,
            tried: vec![FormError {
                form: PrefillForm::Queued,
                error: 0.1,
            }],
        };
        assert_eq!(alone.ratio(), None);
        assert!(alone.sentence().contains("only form tried"));
    }

    #[test]
    fn parallel_limits_are_tried_below_the_highest_concurrency() {
        let forms = candidates(&[Schedule::Separate], None, true, 8);
        let units: Vec<Option<u32>> = forms.iter().map(|f| f.prefill_units).collect();
        assert_eq!(units, [Some(1), Some(2), Some(4), None]);
        assert_eq!(candidates(&[Schedule::Separate], None, false, 8).len(), 1);
        assert_eq!(candidates(&Schedule::ALL, Some(0.0), false, 8).len(), 2);
    }
}
