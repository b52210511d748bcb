//! The sentences flags print: what was seen, with units, and what to do.

use super::direction::expectation;
use super::{Flag, Metric, MetricCv, Queueing};
use crate::format::{percent, seconds, sig3, thousands, tok_s};
use crate::metrics::Axis;
use crate::schedule::LagCause;
use crate::stats::trials_needed;
use std::fmt;

/// Where on an axis a point sits: `concurrency 32`, `120K input tokens`.
fn at(axis: Axis, v: u32) -> String {
    let tokens = |what: &str| {
        if v >= 1000 && v.is_multiple_of(1000) {
            format!("{}K {what}", v / 1000)
        } else {
            format!("{v} {what}")
        }
    };
    match axis {
        Axis::Concurrency => format!("concurrency {v}"),
        Axis::InputTokens => tokens("input tokens"),
        Axis::OutputTokens => tokens("output tokens"),
        Axis::ImagePixels => format!("{v} image pixels"),
    }
}

/// `trial 2` or `trials 1, 3`.
fn trials(ts: &[u32]) -> String {
    let list: Vec<String> = ts.iter().map(u32::to_string).collect();
    let word = if ts.len() == 1 { "trial" } else { "trials" };
    format!("{word} {}", list.join(", "))
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

impl fmt::Display for Flag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Flag::BrokenAnswers { .. } => broken_answers(self, f),
            Flag::AccuracyDrop {
                concurrency,
                baseline_concurrency,
                change,
                p_holm,
                ..
            } => write!(
                f,
                "Graded answers are {} points less accurate at concurrency {concurrency} than at \
                 {baseline_concurrency}, on the same items (exact McNemar, Holm-adjusted p = {}): \
                 the deployment answers worse under batching. Its speed at this load was measured \
                 on less accurate answers; check the batched path (kernels, parallelism) before \
                 serving this load",
                sig3(-change * 100.0),
                sig3(*p_holm)
            ),
            Flag::ParseRateFalls { .. } => parse_rate_falls(self, f),
            Flag::WrongDirection { .. } => wrong_direction(self, f),
            Flag::NoisyPoint { .. } => noisy_point(self, f),
            Flag::OutlierTrial { .. } => outlier_trial(self, f),
            Flag::Failures { .. } => failures(self, f),
            Flag::TokenMismatch { .. } => token_mismatch(self, f),
            Flag::UnexpectedCacheHits { .. } => unexpected_cache_hits(self, f),
            Flag::SaturationKnee { .. } => saturation_knee(self, f),
            Flag::LoadGeneratorBehind { .. } => load_generator_behind(self, f),
            Flag::ClientBusy { .. } => client_busy(self, f),
            Flag::ScheduleDelay { .. } => schedule_delay(self, f),
            Flag::RateShortfall { .. } => rate_shortfall(self, f),
            Flag::PointInvalid { .. } => point_invalid(self, f),
            Flag::GpuHeldBack { cause, .. } => write!(
                f,
                "{}{}: its numbers are those of a slowed GPU, not the deployment's at full \
                 clock. Check the GPUs' power limit and cooling (`nvidia-smi -q -d PERFORMANCE`) \
                 and measure again",
                cause.to_string()[..1].to_uppercase(),
                &cause.to_string()[1..]
            ),
        }?;
        // A likely cause, said after what was seen.
        match self {
            Flag::NoisyPoint { gpu: Some(c), .. }
            | Flag::OutlierTrial { gpu: Some(c), .. }
            | Flag::WrongDirection { gpu: Some(c), .. } => {
                write!(f, " Likely cause: {c}.")
            }
            _ => Ok(()),
        }
    }
}

fn broken_answers(flag: &Flag, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let Flag::BrokenAnswers {
        checked,
        issues,
        length,
        trend,
        excerpt,
        ..
    } = flag
    else {
        return Ok(());
    };
    let mut seen: Vec<String> = issues
        .iter()
        .map(|s| {
            format!(
                "{} in {} of {} answers ({})",
                s.issue.describe(),
                thousands(s.count),
                thousands(*checked),
                percent(s.share)
            )
        })
        .collect();
    if let Some(l) = length {
        seen.push(format!(
            "a mean length of {} tokens where {} were asked{}",
            sig3(l.mean_output),
            sig3(l.mean_planned),
            if l.forced { " (forced)" } else { "" }
        ));
    }
    write!(
        f,
        "{}; this point's throughput and latency were measured on broken output",
        capitalised(&seen.join(", "))
    )?;
    if !trend.is_empty() {
        let along: Vec<String> = trend
            .iter()
            .map(|(c, s)| format!("{} at c={c}", percent(*s)))
            .collect();
        write!(f, " (with load: {})", along.join(", "))?;
    }
    if let Some((issue, text)) = excerpt {
        write!(f, ". A {} answer ends: \"{text}\"", issue.describe())?;
    }
    write!(
        f,
        ". Check the server's answers (answer_text in requests.parquet; \
         `[run] keep_answers = \"all\"` keeps every one) before comparing its speed"
    )
}

fn noisy_point(flag: &Flag, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let Flag::NoisyPoint {
        n,
        threshold,
        metrics,
        queueing,
        ..
    } = flag
    else {
        return Ok(());
    };
    disagreement(metrics, *threshold, *n, f)?;
    host_tail(metrics, f)?;
    match queueing {
        Some(q) => queueing_advice(q, *n, f),
        None => rerun_advice(metrics, *n, f),
    }
}

/// What was seen: the metrics whose trials disagree beyond the CV limit,
/// and why some are judged per token.
fn disagreement(
    metrics: &[MetricCv],
    threshold: f64,
    n: usize,
    f: &mut fmt::Formatter<'_>,
) -> fmt::Result {
    let list: Vec<String> = metrics
        .iter()
        .map(|m| {
            let per = match (m.per_token, m.metric) {
                (false, _) => "",
                (true, Metric::TtftS) => " per prompt token",
                (true, _) => " per answer token",
            };
            format!("{}{per} by {}", m.metric.name(), percent(m.cv))
        })
        .collect();
    write!(
        f,
        "Trials disagree beyond the {} CV limit: {} across {n} trials.",
        percent(threshold),
        list.join(", "),
    )?;
    if metrics.iter().any(|m| m.per_token) {
        write!(
            f,
            " The plan draws prompt or answer lengths from distributions, so trials differ \
             in length by design: TTFT and E2E are judged per token."
        )?;
    }
    Ok(())
}

/// The metrics whose spread is within qexp's own event-loop lag: the
/// client host's scheduling tail, said as such (nothing when none is).
fn host_tail(metrics: &[MetricCv], f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let host: Vec<&str> = metrics
        .iter()
        .filter(|m| m.host_lag_s.is_some())
        .map(|m| m.metric.name())
        .collect();
    if host.is_empty() {
        return Ok(());
    }
    let lag = metrics
        .iter()
        .filter_map(|m| m.host_lag_s)
        .fold(f64::NAN, f64::max);
    write!(
        f,
        " {} {} across trials by no more than qexp's own event loop woke late \
         (p99 up to {}): that is the client host's scheduling tail (timer \
         granularity, other processes, a simulator sharing qexp's cores), not the \
         server.",
        capitalised(&host.join(" and ")),
        if host.len() == 1 { "differs" } else { "differ" },
        seconds(lag)
    )
}

/// What to do at an open-loop point where requests queue: trials differ
/// because each one's queue follows its own arrivals.
fn queueing_advice(q: &Queueing, n: usize, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    write!(
        f,
        " Requests queue at this rate (a trial's TTFT of {}, past {}× the {} at {} req/s), \
         and a queue follows each trial's arrivals: near capacity, trials differ without \
         any interference. For a steadier median rerun with --trials {} or a longer \
         [load] duration_s.",
        seconds(q.ttft_s),
        q.factor,
        seconds(q.low_ttft_s),
        sig3(q.low_rate),
        (n + 2).max(5)
    )
}

/// What to do otherwise: a quieter client host when its tail explains every
/// metric, else more trials or finding the interference.
fn rerun_advice(metrics: &[MetricCv], n: usize, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    if metrics.iter().all(|m| m.host_lag_s.is_some()) {
        write!(
            f,
            " Rerun on a quieter client host (or a release build) before reading those \
             tails; the server is not shown to vary."
        )
    } else {
        write!(
            f,
            " The medians are uncertain; rerun with --trials {} or find the interference \
             (other load on the server or client, throttling, a restart mid-point).",
            (n + 2).max(5)
        )
    }
}

fn outlier_trial(flag: &Flag, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let Flag::OutlierTrial {
        trial, n, metrics, ..
    } = flag
    else {
        return Ok(());
    };
    let list: Vec<String> = metrics
        .iter()
        .map(|m| {
            let fence = if m.severe { "3×IQR" } else { "1.5×IQR" };
            let (v, med) = (m.metric.format(m.value), m.metric.format(m.median));
            format!(
                "{} {v} against a median of {med} (beyond {fence})",
                m.metric.name()
            )
        })
        .collect();
    write!(
        f,
        "Trial {trial} stands apart from the point's {n} trials: {}. Look at that \
         trial's rows in requests.parquet and the server's state at the time (errors, \
         a restart, other load); the median resists one outlier, but rerun the point \
         if the cause was external.",
        list.join("; ")
    )
}

fn failures(flag: &Flag, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let Flag::Failures {
        failures,
        requests,
        trials: ts,
        classes,
        ..
    } = flag
    else {
        return Ok(());
    };
    write!(
        f,
        "{} of {} requests failed ({}) in {}",
        thousands(*failures),
        thousands(*requests),
        percent(*failures as f64 / (*requests).max(1) as f64),
        trials(ts)
    )?;
    if !classes.is_empty() {
        let list: Vec<String> = classes
            .iter()
            .map(|(c, n)| format!("{c} {}", thousands(*n)))
            .collect();
        write!(f, " ({})", list.join(", "))?;
    }
    write!(f, "; the medians use only the successful ones.")?;
    let mut said: Vec<&str> = Vec::new();
    for (c, _) in classes {
        let a = super::failures::advice(*c);
        if !said.contains(&a) {
            said.push(a);
            write!(f, " {}.", capitalised(a))?;
        }
    }
    write!(
        f,
        " Check error_class and error_message in requests.parquet and the server log."
    )
}

fn unexpected_cache_hits(flag: &Flag, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let Flag::UnexpectedCacheHits {
        cached_tokens,
        share,
        trials: ts,
        ..
    } = flag
    else {
        return Ok(());
    };
    let share = share.map_or(String::new(), |s| {
        format!(" ({} of prompt tokens)", percent(s))
    });
    write!(
        f,
        "The server reported {} cached prompt tokens{share} in {}, although qexp \
         prompts share no prefix; TTFT here partly measures cache hits, not prefill. \
         Check the server's prefix-cache counters on /metrics and that each prompt's \
         nonce comes first (a system prompt ahead of it is shared).",
        thousands(*cached_tokens),
        trials(ts)
    )
}

fn saturation_knee(flag: &Flag, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let Flag::SaturationKnee {
        concurrency: c,
        agg_tok_s,
        gain_per_doubling,
        last_concurrency,
        ttft_s,
        last_ttft_s,
        plateau,
        slo,
        ..
    } = flag
    else {
        return Ok(());
    };
    write!(
        f,
        "Aggregate throughput stops scaling at concurrency {c} ({}): beyond it, it gains \
         at most {} per doubling up to concurrency {last_concurrency} while median TTFT \
         grows from {} to {}; higher concurrency only queues requests.",
        tok_s(*agg_tok_s),
        percent(gain_per_doubling.max(0.0)),
        seconds(*ttft_s),
        seconds(*last_ttft_s)
    )?;
    let at = |l: &super::knee::LoadAt| {
        format!(
            "concurrency {} ({}, TTFT {})",
            l.concurrency,
            tok_s(l.agg_tok_s),
            seconds(l.ttft_s)
        )
    };
    if let Some(s) = slo {
        return match &s.holds_up_to {
            Some(l) => write!(
                f,
                " The plan's SLOs hold up to {}: serve there, or add capacity to go higher.",
                at(l)
            ),
            None => write!(
                f,
                " The plan's SLOs hold at no concurrency swept: add capacity, or sweep lower."
            ),
        };
    }
    let low = &plateau.low;
    match &plateau.climb {
        Some(climb) if climb.concurrency <= *c => write!(
            f,
            " TTFT leaves its low-load plateau earlier: {} at concurrency {}, {} ({}×, over \
             the {}× limit) at concurrency {}. For fast first tokens serve near {}; near \
             {c}, users wait {} ({}×) for a first token for {} more throughput. An [slo] in \
             the plan decides between them.",
            seconds(low.ttft_s),
            low.concurrency,
            seconds(climb.ttft_s),
            sig3(climb.ttft_s / low.ttft_s),
            plateau.factor,
            climb.concurrency,
            at(&plateau.last),
            seconds(*ttft_s),
            sig3(ttft_s / low.ttft_s),
            percent(agg_tok_s / plateau.last.agg_tok_s - 1.0)
        ),
        _ => write!(
            f,
            " TTFT is still within {}× its low-load value there ({} against {} at \
             concurrency {}): serve near {c} concurrent requests, or add capacity to go higher.",
            plateau.factor,
            seconds(*ttft_s),
            seconds(low.ttft_s),
            low.concurrency
        ),
    }
}

fn load_generator_behind(flag: &Flag, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let Flag::LoadGeneratorBehind {
        trials: ts,
        send_lag_s,
        limit_s,
        cpu_cores,
        ..
    } = flag
    else {
        return Ok(());
    };
    write!(
        f,
        "Requests left the client up to {} after they were due in {} (limit {})",
        seconds(*send_lag_s),
        trials(ts),
        seconds(*limit_s)
    )?;
    if super::loadgen::host_delayed(*cpu_cores) {
        return write!(
            f,
            " while qexp used only {cpu_cores:.2} cores: {HOST_DELAYED} The sends, and \
             every time counted from them, are that late."
        );
    }
    write!(
        f,
        ": the load generator fell behind, so these numbers describe the client, not the \
         server. Give qexp more CPU, lower the concurrency, or split the load across \
         client machines and merge the results."
    )
}

/// Why a late client that used little CPU is the host's doing, and what helps.
const HOST_DELAYED: &str = "qexp was not short of CPU, the host delayed it (another \
     process on its cores, timer granularity, a virtual machine's stolen time); rerun on a \
     quieter host or give qexp cores of its own (taskset), not more load generators.";

fn client_busy(flag: &Flag, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let Flag::ClientBusy {
        trials: ts,
        loop_lag_p99_s,
        cpu_cores,
        limit_s,
        ..
    } = flag
    else {
        return Ok(());
    };
    if super::loadgen::host_delayed(*cpu_cores) {
        return write!(
            f,
            "qexp's event loop woke up to {} late (p99) in {} (limit {}) while qexp used \
             only {cpu_cores:.2} cores: {HOST_DELAYED} Chunk arrivals and sends were \
             stamped that late.",
            seconds(*loop_lag_p99_s),
            trials(ts),
            seconds(*limit_s)
        );
    }
    let cores = if cpu_cores.is_finite() {
        format!(", using {cpu_cores:.2} cores")
    } else {
        String::new()
    };
    write!(
        f,
        "qexp's event loop woke up to {} late (p99) in {}{cores} (limit {}): chunk arrivals \
         and sends were stamped that late, so the client may have set the pace. Give qexp \
         more CPU, lower the concurrency, or split the load across client machines.",
        seconds(*loop_lag_p99_s),
        trials(ts),
        seconds(*limit_s)
    )
}

fn schedule_delay(flag: &Flag, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let Flag::ScheduleDelay {
        cause,
        service_ttft_p99_s,
        response_ttft_p99_s,
        limit_s,
        cpu_cores,
        ..
    } = flag
    else {
        return Ok(());
    };
    let host = format!(
        "the client sent late while qexp used only {cpu_cores:.2} cores: the service \
         latencies understate what users would wait, and {HOST_DELAYED}"
    );
    let what = match cause {
        LagCause::Client if super::loadgen::host_delayed(*cpu_cores) => host.as_str(),
        LagCause::Client => {
            "the client sent late (load-generator lag): the service latencies \
             understate what users would wait. Give qexp more CPU or lower the rate."
        }
        LagCause::Backlog => {
            "arrivals queued behind load.max_in_flight (the server's backlog): the \
             server cannot keep up with this rate, and the response time from the \
             schedule is what users would wait."
        }
    };
    write!(
        f,
        "TTFT p99 is {} from the scheduled send but {} from the send (more than {} \
         apart): {what}",
        seconds(*response_ttft_p99_s),
        seconds(*service_ttft_p99_s),
        seconds(*limit_s)
    )
}

fn rate_shortfall(flag: &Flag, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let Flag::RateShortfall {
        scheduled_rate,
        achieved_rate,
        tolerance,
        cpu_cores,
        ..
    } = flag
    else {
        return Ok(());
    };
    write!(
        f,
        "Requests left at {} req/s where the schedule asked {} req/s (more than {} \
         below): the client set the pace, not the plan.",
        sig3(*achieved_rate),
        sig3(*scheduled_rate),
        percent(*tolerance)
    )?;
    if super::loadgen::host_delayed(*cpu_cores) {
        return write!(f, " qexp used only {cpu_cores:.2} cores: {HOST_DELAYED}");
    }
    write!(
        f,
        " Give qexp more CPU, lower the rate, or split the load across client machines."
    )
}

fn point_invalid(flag: &Flag, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let Flag::PointInvalid {
        trials: ts, reason, ..
    } = flag
    else {
        return Ok(());
    };
    let (was, its) = if ts.len() == 1 {
        ("was", "Its")
    } else {
        ("were", "Their")
    };
    write!(
        f,
        "{} {was} marked invalid: {reason}. {its} numbers are still in this point's \
         statistics; fix the cause and rerun the point.",
        capitalised(&trials(ts))
    )
}

fn parse_rate_falls(flag: &Flag, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let Flag::ParseRateFalls {
        concurrency,
        baseline_concurrency,
        rate,
        baseline_rate,
        change_interval: (lo, hi),
        compared,
        trend,
        ..
    } = flag
    else {
        return Ok(());
    };
    let confidence = if *compared > 1 {
        format!("95% Newcombe interval shared by the {compared} points compared")
    } else {
        "95% Newcombe interval".to_string()
    };
    let along = trend
        .iter()
        .map(|(c, r)| format!("{} at {c}", percent(*r)))
        .collect::<Vec<_>>()
        .join(", ");
    write!(
        f,
        "{} of answers parsed at concurrency {concurrency} ({}/{}) against {} at \
         {baseline_concurrency} ({}/{}): a fall of {} to {} points ({confidence}), \
         beyond both points' noise{}. Tool calls or structured answers break under batching; \
         check the server's parser and constrained decoding at this load before serving it",
        percent(rate.share),
        rate.parsed,
        rate.checked,
        percent(baseline_rate.share),
        baseline_rate.parsed,
        baseline_rate.checked,
        sig3(-hi * 100.0),
        sig3(-lo * 100.0),
        if along.is_empty() {
            String::new()
        } else {
            format!(" (along concurrency: {along})")
        }
    )
}

fn wrong_direction(flag: &Flag, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let Flag::WrongDirection {
        axis,
        axis_value,
        prev_axis_value,
        metric,
        value,
        prev_value,
        verified,
        p_value,
        trials_needed: needed,
        cache_explains,
        ..
    } = flag
    else {
        return Ok(());
    };
    let verb = if value < prev_value { "fell" } else { "rose" };
    let should = expectation(*axis, *metric).map_or("", |e| e.should());
    write!(
        f,
        "{} {verb} from {} at {} to {} at {} ({}{}), but it should {should}.",
        capitalised(metric.name()),
        metric.format(*prev_value),
        at(*axis, *prev_axis_value),
        metric.format(*value),
        at(*axis, *axis_value),
        if value > prev_value { "+" } else { "" },
        percent(value / prev_value - 1.0),
    )?;
    if *verified {
        let p = p_value.map_or(String::new(), |p| {
            format!(" (Mann–Whitney p = {})", sig3(p))
        });
        write!(
            f,
            " The difference is beyond the noise of both points{p}: check whether the server \
             changed between them (a restart, other flags, another context limit) and rerun \
             both in one session."
        )?;
    } else {
        let k = needed.unwrap_or_else(|| trials_needed(0.05));
        write!(
            f,
            " With a single trial this cannot be told from noise: run with --trials {k} to \
             settle it."
        )?;
    }
    match (cache_explains, metric) {
        (Some(true), _) => write!(
            f,
            " Prefix-cache hits explain it: the faster point had less left to prefill (cached \
             tokens in the responses, or the server's prefix-cache counters)."
        ),
        (Some(false), _) => write!(f, " Prefix-cache hits do not explain it."),
        (None, Metric::DecodeTokS) => Ok(()),
        (None, _) => write!(
            f,
            " The run has no cached-token data, so prefix-cache reuse is not ruled out: check \
             the server's /metrics prefix-cache counters, or enable its cache report (SGLang \
             --enable-cache-report, vLLM --enable-prompt-tokens-details)."
        ),
    }
}

fn token_mismatch(flag: &Flag, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let Flag::TokenMismatch {
        output_mismatches,
        requests,
        trials: ts,
        planned_input,
        server_input,
        ..
    } = flag
    else {
        return Ok(());
    };
    let mut parts = Vec::new();
    if *output_mismatches > 0 {
        parts.push(format!(
            "{} of {} requests have output counts that disagree (server usage vs the client's \
             count or the planned max_tokens) in {}",
            thousands(*output_mismatches),
            thousands(*requests),
            trials(ts)
        ));
    }
    if let Some(s) = server_input {
        let rel = s / f64::from(*planned_input) - 1.0;
        parts.push(format!(
            "the server counted {} prompt tokens where the plan asked for {} ({}{})",
            sig3(*s),
            thousands(u64::from(*planned_input)),
            if rel > 0.0 { "+" } else { "" },
            percent(rel)
        ));
    }
    write!(
        f,
        "{}. Token rates and input lengths are off by as much; make sure the server reports \
         usage in the stream, send ignore_eos for exact output lengths, and recalibrate prompts \
         against this server's tokenizer.",
        capitalised(&parts.join("; "))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_places_and_trial_lists() {
        assert_eq!(at(Axis::InputTokens, 120_000), "120K input tokens");
        assert_eq!(at(Axis::Concurrency, 32), "concurrency 32");
        assert_eq!(trials(&[1, 3]), "trials 1, 3");
        assert_eq!(trials(&[2]), "trial 2");
    }

    #[test]
    fn a_late_client_at_low_cpu_is_sent_to_the_host_not_to_more_cpu() {
        let shortfall = |cpu_cores: f64| {
            Flag::RateShortfall {
                point_id: 0,
                scheduled_rate: 100.0,
                achieved_rate: 90.0,
                tolerance: 0.03,
                cpu_cores,
            }
            .to_string()
        };
        let delay = |cpu_cores: f64| {
            Flag::ScheduleDelay {
                point_id: 0,
                cause: LagCause::Client,
                service_ttft_p99_s: 0.1,
                response_ttft_p99_s: 0.3,
                limit_s: 0.01,
                cpu_cores,
            }
            .to_string()
        };
        for text in [shortfall(0.1), delay(0.1)] {
            assert!(
                text.contains("not short of CPU") && !text.contains("Give qexp more CPU"),
                "{text}"
            );
        }
        for text in [
            shortfall(1.2),
            delay(1.2),
            shortfall(f64::NAN),
            delay(f64::NAN),
        ] {
            assert!(text.contains("Give qexp more CPU"), "{text}");
        }
    }
}
