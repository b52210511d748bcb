//! The template context of one run, built from its analysis: the views of
//! [`crate::views`], filled in.

use crate::format::num;
use crate::headline::{flag_views, headline};
use crate::tables::tables;
use crate::views::{FailureRow, ReportContext, ServerDoc};
use qexp_analysis::anomaly::ThresholdSource;
use qexp_analysis::RunAnalysis;

/// The failures table's rows, in point order.
fn failure_rows(a: &RunAnalysis) -> Vec<FailureRow> {
    a.failures
        .iter()
        .map(|f| FailureRow {
            point: a
                .points
                .iter()
                .find(|p| p.point.id == f.point_id)
                .map_or_else(|| format!("point {}", f.point_id), |p| p.point.label()),
            class: f.class.clone(),
            count: f.count,
            trials: f
                .trials
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            message: cut(&f.message, 300),
        })
        .collect()
}

/// `s` cut at `max` characters, with an ellipsis when cut.
fn cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// Builds the template context for one run from its analysis: its flags,
/// the thresholds they used and where those came from.
pub fn report_context(a: &RunAnalysis) -> ReportContext {
    let m = &a.manifest;
    let flags = flag_views(&a.flags, &a.points);
    let mut tables = tables(&a.points, &flags);
    if !m.target.api.streams() {
        crate::tables::without_ttft(&mut tables);
    }
    ReportContext {
        experiment: m.experiment.clone(),
        description: a.description.clone(),
        run_id: m.run_id.clone(),
        status: m.status.as_str().to_string(),
        stop_reason: m.stop_reason.clone(),
        merge_notes: m.merged.as_ref().map(|r| r.notes()).unwrap_or_default(),
        saturation_notes: saturation_notes(a),
        simulated: m.target.simulated,
        simulated_note: simulated_note(a),
        target: m.target_label(),
        model: m.target.model.clone(),
        api: m.target.api.as_str().to_string(),
        trials: m.trials,
        plan_path: m.plan_path.clone(),
        plan_hash: m.plan_hash.clone(),
        plan_text: m.plan_text.clone(),
        qexp_version: m.qexp_version.clone(),
        git: git_line(a),
        host: host_line(a),
        gpus: gpus_line(a),
        server: server_docs(a),
        started_at: m.started_at.format("%Y-%m-%d %H:%M:%S UTC").to_string(),
        ended_at: m.ended_at.map_or("–".into(), |t| {
            t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
        }),
        headline: headline(a, &flags),
        thresholds: a.threshold_rows.clone(),
        thresholds_note: match &a.threshold_source {
            ThresholdSource::Plan => None,
            ThresholdSource::Defaults { reason } => Some(format!(
                "These are qexp's defaults, not the plan's: {reason}."
            )),
        },
        server_counters: tables.iter().any(|t| t.server),
        tables,
        classes: crate::classes::class_view(&a.points, &a.classes),
        turns: crate::turns::turn_rows(&a.points, &a.turns),
        reasoning: crate::turns::reasoning_rows(&a.points, &a.reasoning),
        streams: m.target.api.streams(),
        steady: crate::steady::steady_rows(&a.points),
        steady_rule: crate::steady::rule(),
        open_loop: a
            .schedule
            .as_ref()
            .and_then(crate::open_loop::open_loop_view),
        flags,
        charts: Vec::new(),
        distributions: Vec::new(),
        fit: None,
        narrative: None,
        deployments: a
            .deployments
            .as_ref()
            .map(crate::deployments::deployments_view),
        failures: failure_rows(a),
        accuracy: accuracy_rows(a),
        equivalence: equivalence_rows(a),
    }
}

/// One sentence per `[run] stop_past_saturation` stop: the trial, why,
/// and the points it left unmeasured.
fn saturation_notes(a: &RunAnalysis) -> Vec<String> {
    let label = |id: u32| {
        a.manifest
            .points
            .iter()
            .find(|p| p.id == id)
            .map_or_else(|| format!("point {id}"), qexp_plan::Point::label)
    };
    a.manifest
        .saturation_stops
        .iter()
        .map(|s| {
            let skipped: Vec<String> = s.skipped.iter().map(|&id| label(id)).collect();
            format!(
                "trial {}, after {}: {}; not measured: {}",
                s.trial,
                label(s.point_id),
                s.reason,
                skipped.join(", ")
            )
        })
        .collect()
}

/// A sentence about the simulator (profile, time scale), when the run was simulated.
fn simulated_note(a: &RunAnalysis) -> Option<String> {
    let m = &a.manifest;
    m.target.simulated.then(|| {
        let scale = m.target.sim_time_scale.unwrap_or(1.0);
        let mut s = format!(
            "Simulated: these numbers come from qexp's embedded simulator (profile `{}`), not from an inference server.",
            m.target.sim_profile.as_deref().unwrap_or("?")
        );
        if (scale - 1.0).abs() > 1e-9 {
            s.push_str(&format!(
                " Simulated time is compressed: every simulated duration ran {} times faster than the profile's real-time model, so latencies are {} times shorter and throughputs {} times higher than the profile describes.",
                num(1.0 / scale), num(1.0 / scale), num(1.0 / scale)
            ));
        }
        s
    })
}

/// `commit (branch, dirty)`, or that the run was not made in git.
fn git_line(a: &RunAnalysis) -> String {
    let m = &a.manifest;
    match &m.git {
        Some(g) => format!(
            "{} ({}{})",
            g.commit
                .as_deref()
                .map_or("no commit", |c| &c[..c.len().min(12)]),
            g.branch.as_deref().unwrap_or("detached"),
            match g.dirty {
                Some(true) => ", dirty",
                Some(false) => "",
                None => ", dirty: unknown",
            }
        ),
        None => "not in a git repository".into(),
    }
}

/// The host on one line: name, OS, kernel, CPU and memory.
fn host_line(a: &RunAnalysis) -> String {
    let h = &a.manifest.host;
    format!(
        "{} — {}, kernel {}, {} ({} CPUs), {:.1} GiB",
        h.hostname.as_deref().unwrap_or("?"),
        h.os.as_deref().unwrap_or("?"),
        h.kernel.as_deref().unwrap_or("?"),
        h.cpu_model.as_deref().unwrap_or("?"),
        h.cpus,
        h.memory_bytes as f64 / (1u64 << 30) as f64
    )
}

/// The host's GPUs on one line, or "none reported".
fn gpus_line(a: &RunAnalysis) -> String {
    let h = &a.manifest.host;
    if h.gpus.is_empty() {
        "none reported".into()
    } else {
        h.gpus
            .iter()
            .map(|g| {
                format!(
                    "{} ({} MiB, driver {})",
                    g.name,
                    g.memory_mib.unwrap_or(0),
                    g.driver.as_deref().unwrap_or("?")
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// What the server said about itself: the fingerprint first (engine,
/// version, context limit and flags in one line), then each document, its
/// JSON cut at 300 bytes.
fn server_docs(a: &RunAnalysis) -> Vec<ServerDoc> {
    let m = &a.manifest;
    let server = m
        .server
        .iter()
        .flat_map(|info| &info.documents)
        .map(|(path, v)| {
            let mut json = v.to_string();
            if json.len() > 300 {
                let mut cut = 300;
                while !json.is_char_boundary(cut) {
                    cut -= 1;
                }
                json.truncate(cut);
                json.push('…');
            }
            ServerDoc {
                path: path.clone(),
                json,
            }
        });
    m.fingerprint
        .iter()
        .map(|fp| ServerDoc {
            path: "fingerprint".into(),
            json: fp.summary(),
        })
        .chain(server)
        .collect()
}

/// One row per point that graded items: its accuracy with its interval, and
/// its verdict against the lowest load of its workload.
fn accuracy_rows(a: &RunAnalysis) -> Vec<crate::views::AccuracyRow> {
    use qexp_analysis::accuracy::Accuracy;
    use qexp_analysis::format::percent;
    let swept = crate::labels::swept(a.points.iter().map(|p| &p.point));
    a.points
        .iter()
        .filter_map(|p| {
            let acc = Accuracy::of(p)?;
            let failed = acc.graded - acc.answered;
            let vs = a
                .accuracy_by_load
                .iter()
                .find(|c| c.point_id == p.point.id)
                .and_then(|c| {
                    let t = c.diff.test?;
                    let base = a
                        .points
                        .iter()
                        .find(|q| q.point.id == c.baseline_point_id)?;
                    Some(format!(
                        "{} against c={} ({:+.1} points, p = {})",
                        c.diff.verdict.symbol(),
                        base.point.concurrency,
                        t.estimate * 100.0,
                        qexp_analysis::format::sig3(t.p_holm)
                    ))
                })
                .unwrap_or_default();
            Some(crate::views::AccuracyRow {
                point: crate::labels::with_deployment(&p.point, &swept),
                right: match failed {
                    0 => format!("{}/{}", acc.right, acc.answered),
                    n => format!("{}/{} ({n} failed)", acc.right, acc.answered),
                },
                accuracy: percent(acc.share),
                interval: acc.interval.map_or("–".into(), |(lo, hi)| {
                    format!("{} – {}", percent(lo), percent(hi))
                }),
                vs_lowest_load: vs,
            })
        })
        .collect()
}

/// One row per deployment compared with the baseline for identical answers.
fn equivalence_rows(a: &RunAnalysis) -> Vec<crate::views::EquivalenceRow> {
    use qexp_analysis::equivalence::{Identical, EQUIVALENCE_SLACK};
    use qexp_analysis::format::percent;
    let share = |i: &Identical| format!("{} ({}/{})", percent(i.share), i.identical, i.pairs);
    let own = |name: &str, i: &Option<Identical>| match i {
        Some(i) => format!("{name} {}", share(i)),
        None => format!("{name} not measured"),
    };
    a.equivalence
        .iter()
        .map(|e| crate::views::EquivalenceRow {
            pair: format!("{} against {}", e.deployment, e.baseline),
            identical: share(&e.overall),
            by_point: e
                .points
                .iter()
                .map(|(label, i)| format!("{label}: {}", percent(i.share)))
                .collect::<Vec<_>>()
                .join(", "),
            first_divergence: e.overall.first_divergence_word.map_or("–".into(), |w| {
                format!("word {} (median of {})", qexp_analysis::format::sig3(w), e.overall.divergences_measured)
            }),
            baselines: format!(
                "{}; {}",
                own(&e.baseline, &e.baseline_self),
                own(&e.deployment, &e.deployment_self)
            ),
            judged: if e.beyond_baseline {
                format!(
                    "Finding: answers differ beyond the baseline (more than {} below what each deployment gives itself across loads): not greedy-equivalent; a change that should be lossless (speculative decoding on against off) is not",
                    percent(EQUIVALENCE_SLACK)
                )
            } else if e.baseline_self.is_none() && e.deployment_self.is_none() {
                "no baseline: grade items ([accuracy]) at two loads to measure what batching alone changes".into()
            } else {
                "within the baseline".into()
            },
        })
        .collect()
}
