//! Fault injection: a seeded choice, per generation request, of one way to
//! misbehave — the failures a benchmark meets against servers pushed to their
//! limits (connections closed or reset, 429/500/503, broken SSE, stalls).
//!
//! A [`FaultPlan`] is a list of `(fault, fraction)` rules and a seed. The n-th
//! generation request the server receives (counting from 0, in arrival
//! order) draws one number from the seed and n; the rules' fractions are laid
//! end to end on [0, 1), so `reset:0.1,http_500:0.05` resets about 10% of
//! requests and answers 5% with HTTP 500. Requests that draw no fault are
//! served normally. The same seed always faults the same request indices.
//!
//! Written as text (`qexp sim --faults`, or `sim:<profile>?faults=…&seed=N`
//! as a target): a comma-separated list of `name[=param]:fraction`, e.g.
//! `reset=3:0.1,stall=30:0.02,http_503=7:0.05`. See [`Fault`] for the names.

use std::convert::Infallible;
use std::fmt;
use std::io;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures_util::stream::{self, BoxStream, Stream, StreamExt};
use serde_json::json;

use crate::jitter::Jitter;

/// One way a request can go wrong. The parameter after `=` in the text form
/// is given in brackets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fault {
    /// `close`: the connection is closed before any response byte.
    Close,
    /// `reset[=N]`: the stream is cut (connection aborted) after N content chunks (default 2).
    Reset(u32),
    /// `http_429`: 429 Too Many Requests with an OpenAI error body.
    RateLimited,
    /// `http_500`: 500 Internal Server Error.
    Internal,
    /// `http_503[=S]`: 503 Service Unavailable with `Retry-After: S` (default 5).
    Unavailable(u32),
    /// `malformed_json`: after the first content chunk, an event whose data is not JSON.
    MalformedJson,
    /// `no_done`: the stream ends (cleanly) after the usage chunk, without `data: [DONE]`.
    NoDone,
    /// `stall[=S]`: after the first content chunk, S seconds of silence (default 3600), then the rest.
    Stall(f64),
    /// `slow_headers[=S]`: S seconds (default 3600) before the response headers.
    SlowHeaders(f64),
    /// `huge_chunk[=BYTES]`: one content chunk of BYTES bytes of text (default 2 MiB).
    HugeChunk(usize),
    /// `invalid_utf8`: after the first content chunk, an event with bytes that are not UTF-8.
    InvalidUtf8,
    /// `wrong_content_type`: 200 with `text/html` (a proxy's error page) instead of an event stream.
    WrongContentType,
    /// `context_length`: 400 with the message vLLM gives for a prompt longer than the context.
    ContextLength,
}

/// Every fault name of the text form, for messages.
pub const FAULT_NAMES: &[&str] = &[
    "close",
    "reset",
    "http_429",
    "http_500",
    "http_503",
    "malformed_json",
    "no_done",
    "stall",
    "slow_headers",
    "huge_chunk",
    "invalid_utf8",
    "wrong_content_type",
    "context_length",
];

/// A fault specification that cannot be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("fault spec `{item}`: {reason}")]
pub struct FaultSpecError {
    /// The offending item of the list.
    pub item: String,
    /// What is wrong with it.
    pub reason: FaultSpecProblem,
}

/// What is wrong with one item of a fault specification.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FaultSpecProblem {
    /// A fault's parameter is not a number ≥ 0.
    #[error("`{param}` is not a number ≥ 0")]
    NotANumber {
        /// The parameter as written.
        param: String,
    },
    /// A parameter given to a fault that takes none.
    #[error("`{name}` takes no parameter")]
    TakesNoParameter {
        /// The fault's name.
        name: String,
    },
    /// A name that is not in [`FAULT_NAMES`].
    #[error("unknown fault `{name}`; known: {}", FAULT_NAMES.join(", "))]
    UnknownFault {
        /// The name as written.
        name: String,
    },
    /// A fraction outside 0..=1.
    #[error("fraction `{fraction}` is not between 0 and 1")]
    Fraction {
        /// The fraction as written.
        fraction: String,
    },
    /// The fractions of the list add up to more than 1.
    #[error("the fractions add up to more than 1")]
    OverOne,
    /// `seed=` is not a whole number.
    #[error("the seed is not a whole number")]
    Seed,
    /// `from=` is not a whole number.
    #[error("`from` is not a whole number")]
    From,
    /// `jitter=` is not in [0, 1) or `jitter_s=` is not a number > 0.
    #[error("jitter= takes a fraction in [0, 1) and jitter_s= a period > 0 (simulated seconds)")]
    Jitter,
    /// A query key other than `faults`, `seed`, `from`, `jitter` and `jitter_s`.
    #[error("expected faults=…, seed=N, from=N, jitter=A or jitter_s=P")]
    QueryKey,
}

impl Fault {
    /// Reads `name[=param]`.
    fn parse(text: &str) -> Result<Fault, FaultSpecProblem> {
        let (name, param) = match text.split_once('=') {
            Some((n, p)) => (n.trim(), Some(p.trim())),
            None => (text.trim(), None),
        };
        let num = |default: f64| -> Result<f64, FaultSpecProblem> {
            match param {
                None => Ok(default),
                Some(p) => p
                    .parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite() && *x >= 0.0)
                    .ok_or_else(|| FaultSpecProblem::NotANumber {
                        param: p.to_owned(),
                    }),
            }
        };
        let int = |default: f64| num(default).map(|x| x.min(f64::from(u32::MAX)) as u32);
        let no_param = |f: Fault| match param {
            None => Ok(f),
            Some(_) => Err(FaultSpecProblem::TakesNoParameter {
                name: name.to_owned(),
            }),
        };
        match name {
            "close" => no_param(Fault::Close),
            "reset" => int(2.0).map(Fault::Reset),
            "http_429" => no_param(Fault::RateLimited),
            "http_500" => no_param(Fault::Internal),
            "http_503" => int(5.0).map(Fault::Unavailable),
            "malformed_json" => no_param(Fault::MalformedJson),
            "no_done" => no_param(Fault::NoDone),
            "stall" => num(3600.0).map(Fault::Stall),
            "slow_headers" => num(3600.0).map(Fault::SlowHeaders),
            "huge_chunk" => num(2.0 * 1024.0 * 1024.0).map(|b| Fault::HugeChunk(b as usize)),
            "invalid_utf8" => no_param(Fault::InvalidUtf8),
            "wrong_content_type" => no_param(Fault::WrongContentType),
            "context_length" => no_param(Fault::ContextLength),
            _ => Err(FaultSpecProblem::UnknownFault {
                name: name.to_owned(),
            }),
        }
    }

    /// A pause as a duration (never panics on huge values).
    pub(crate) fn secs(s: f64) -> Duration {
        Duration::try_from_secs_f64(s).unwrap_or(Duration::MAX)
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::Close => write!(f, "close"),
            Fault::Reset(n) => write!(f, "reset={n}"),
            Fault::RateLimited => write!(f, "http_429"),
            Fault::Internal => write!(f, "http_500"),
            Fault::Unavailable(s) => write!(f, "http_503={s}"),
            Fault::MalformedJson => write!(f, "malformed_json"),
            Fault::NoDone => write!(f, "no_done"),
            Fault::Stall(s) => write!(f, "stall={s}"),
            Fault::SlowHeaders(s) => write!(f, "slow_headers={s}"),
            Fault::HugeChunk(b) => write!(f, "huge_chunk={b}"),
            Fault::InvalidUtf8 => write!(f, "invalid_utf8"),
            Fault::WrongContentType => write!(f, "wrong_content_type"),
            Fault::ContextLength => write!(f, "context_length"),
        }
    }
}

/// Which faults hit which requests: rules of (fault, fraction) and a seed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FaultPlan {
    /// Seed of the per-request draw.
    pub seed: u64,
    /// Each fault with the fraction of requests it hits; fractions add up to at most 1.
    pub rules: Vec<(Fault, f64)>,
    /// Requests before this index are never faulted (a server that dies mid-run).
    pub from: u64,
    /// How the server's speed wanders over time (none by default).
    pub jitter: Jitter,
}

impl FaultPlan {
    /// No faults.
    pub fn none() -> FaultPlan {
        FaultPlan::default()
    }

    /// Every request gets `fault`.
    pub fn always(fault: Fault) -> FaultPlan {
        FaultPlan {
            seed: 0,
            rules: vec![(fault, 1.0)],
            ..FaultPlan::default()
        }
    }

    /// True when no request is ever faulted (jitter aside).
    pub fn is_empty(&self) -> bool {
        self.rules.iter().all(|(_, p)| *p <= 0.0)
    }

    /// Parses `name[=param]:fraction,…` (see the module docs).
    pub fn parse(spec: &str, seed: u64) -> Result<FaultPlan, FaultSpecError> {
        let mut rules = Vec::new();
        let mut total = 0.0;
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let bad = |reason: FaultSpecProblem| FaultSpecError {
                item: item.to_owned(),
                reason,
            };
            let (fault, fraction) = match item.rsplit_once(':') {
                Some((f, p)) => (f, p.trim()),
                None => (item, "1"),
            };
            let fault = Fault::parse(fault).map_err(bad)?;
            let fraction = fraction
                .parse::<f64>()
                .ok()
                .filter(|p| (0.0..=1.0).contains(p))
                .ok_or_else(|| {
                    bad(FaultSpecProblem::Fraction {
                        fraction: fraction.to_owned(),
                    })
                })?;
            total += fraction;
            if total > 1.0 + 1e-9 {
                return Err(bad(FaultSpecProblem::OverOne));
            }
            rules.push((fault, fraction));
        }
        Ok(FaultPlan {
            seed,
            rules,
            ..FaultPlan::default()
        })
    }

    /// Reads the query of a `sim:<profile>?faults=…&seed=N&from=M&jitter=A&jitter_s=P`
    /// target (`from`: the first request index faults may hit; `jitter`:
    /// see [`Jitter`]).
    pub fn from_query(query: &str) -> Result<FaultPlan, FaultSpecError> {
        let mut spec = "";
        let mut seed = 0;
        let mut from = 0;
        let mut jitter = Jitter {
            period_s: 1.0,
            ..Jitter::default()
        };
        for pair in query.split('&').filter(|s| !s.is_empty()) {
            let bad = |reason: FaultSpecProblem| FaultSpecError {
                item: pair.to_owned(),
                reason,
            };
            match pair.split_once('=') {
                Some(("faults", v)) => spec = v,
                Some(("seed", v)) => seed = v.parse().map_err(|_| bad(FaultSpecProblem::Seed))?,
                Some(("from", v)) => from = v.parse().map_err(|_| bad(FaultSpecProblem::From))?,
                Some(("jitter", v)) => {
                    jitter.amplitude =
                        Jitter::parse_amplitude(v).ok_or_else(|| bad(FaultSpecProblem::Jitter))?;
                }
                Some(("jitter_s", v)) => {
                    jitter.period_s =
                        Jitter::parse_period(v).ok_or_else(|| bad(FaultSpecProblem::Jitter))?;
                }
                _ => return Err(bad(FaultSpecProblem::QueryKey)),
            }
        }
        jitter.seed = seed;
        Ok(FaultPlan {
            from,
            jitter,
            ..FaultPlan::parse(spec, seed)?
        })
    }

    /// The fault, if any, for the `index`-th generation request.
    pub fn pick(&self, index: u64) -> Option<Fault> {
        if self.is_empty() || index < self.from {
            return None;
        }
        let u = crate::draw::unit(self.seed, index);
        let mut edge = 0.0;
        for (fault, fraction) in &self.rules {
            edge += fraction;
            if u < edge {
                return Some(*fault);
            }
        }
        None
    }
}

impl fmt::Display for FaultPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (fault, p)) in self.rules.iter().enumerate() {
            let sep = if i == 0 { "" } else { "," };
            write!(f, "{sep}{fault}:{p}")?;
        }
        Ok(())
    }
}

/// The response for a fault that answers at once instead of generating:
/// an HTTP error, a proxy's HTML page, or a connection closed unanswered.
pub(crate) fn respond(fault: Option<Fault>, max_context: u32, requested: u64) -> Option<Response> {
    let error = |status: StatusCode, kind: &str, message: String| {
        let body = json!({"error": {"message": message, "type": kind, "code": status.as_u16()}});
        (status, Json(body)).into_response()
    };
    Some(match fault? {
        Fault::Close => {
            // A body that fails before its first byte: the server drops the
            // connection without writing the response.
            let body = stream::once(async { Err::<Bytes, _>(io::Error::other("fault: close")) });
            Response::new(Body::from_stream(body))
        }
        Fault::RateLimited => error(
            StatusCode::TOO_MANY_REQUESTS,
            "RateLimitError",
            "too many requests (simulated)".to_owned(),
        ),
        Fault::Internal => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "InternalServerError",
            "the engine crashed (simulated)".to_owned(),
        ),
        Fault::Unavailable(retry_after) => {
            let mut r = error(
                StatusCode::SERVICE_UNAVAILABLE,
                "ServiceUnavailableError",
                "the server is overloaded (simulated)".to_owned(),
            );
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(retry_after));
            r
        }
        Fault::ContextLength => error(
            StatusCode::BAD_REQUEST,
            "BadRequestError",
            format!(
                "This model's maximum context length is {max_context} tokens. However, you \
                 requested {} tokens (simulated). Please reduce the length of the prompt.",
                requested.max(u64::from(max_context) + 1)
            ),
        ),
        Fault::WrongContentType => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "text/html")],
            "<html><body><h1>502 Bad Gateway</h1></body></html>",
        )
            .into_response(),
        _ => return None,
    })
}

/// Waits before the response headers when the fault says so.
pub(crate) async fn delay_headers(fault: Option<Fault>) {
    if let Some(Fault::SlowHeaders(s)) = fault {
        tokio::time::sleep(Fault::secs(s)).await;
    }
}

/// A streamed body with the fault's damage: frames cut, dropped, delayed or
/// inserted after the first content frame. Other faults pass it through.
pub(crate) fn body<S>(fault: Option<Fault>, frames: S) -> BoxStream<'static, io::Result<Bytes>>
where
    S: Stream<Item = Result<Bytes, Infallible>> + Send + 'static,
{
    let frames = frames.map(|f| match f {
        Ok(b) => Ok::<Bytes, io::Error>(b),
        Err(never) => match never {},
    });
    let Some(fault) = fault else {
        return frames.boxed();
    };
    frames
        .enumerate()
        .flat_map(move |(i, frame)| {
            let mut out: Vec<io::Result<Bytes>> = Vec::new();
            let after_first = i == 0;
            let pause = match fault {
                Fault::Reset(n) if i == n as usize => {
                    out.push(Err(io::Error::other("fault: reset")));
                    return stream::iter(out).chain(stream::pending()).boxed();
                }
                Fault::NoDone if frame.as_ref().is_ok_and(|b| b.as_ref() == crate::sse::DONE) => {
                    return stream::empty().boxed();
                }
                Fault::Stall(s) if i == 1 => Some(Fault::secs(s)),
                _ => None,
            };
            out.push(frame);
            if after_first {
                match fault {
                    Fault::MalformedJson => out.push(Ok(Bytes::from_static(
                        b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\n\n",
                    ))),
                    Fault::InvalidUtf8 => out.push(Ok(Bytes::from_static(
                        b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\xff\xfe\"}}]}\n\n",
                    ))),
                    Fault::HugeChunk(n) => {
                        let mut b = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"".to_vec();
                        b.resize(b.len() + n, b'x');
                        b.extend_from_slice(b"\"}}]}\n\n");
                        out.push(Ok(Bytes::from(b)));
                    }
                    _ => {}
                }
            }
            let delay = async move {
                if let Some(d) = pause {
                    tokio::time::sleep(d).await;
                }
            };
            stream::once(delay)
                .flat_map(move |()| stream::iter(std::mem::take(&mut out)))
                .boxed()
        })
        .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_fault_and_round_trips_through_display() {
        let spec = "close:0.05,reset=3:0.05,http_429:0.05,http_500:0.05,http_503=7:0.05,\
                    malformed_json:0.05,no_done:0.05,stall=1.5:0.05,slow_headers=2:0.05,\
                    huge_chunk=100:0.05,invalid_utf8:0.05,wrong_content_type:0.05,context_length:0.05";
        let plan = FaultPlan::parse(spec, 9).unwrap();
        assert_eq!(plan.rules.len(), FAULT_NAMES.len());
        assert_eq!(plan.rules[1].0, Fault::Reset(3));
        assert_eq!(plan.rules[4].0, Fault::Unavailable(7));
        assert_eq!(plan.rules[7].0, Fault::Stall(1.5));
        assert_eq!(FaultPlan::parse(&plan.to_string(), 9).unwrap(), plan);
    }

    #[test]
    fn bad_specs_name_the_item() {
        for (spec, needle) in [
            ("nope:0.1", "unknown fault"),
            ("reset:2", "between 0 and 1"),
            ("reset:0.6,close:0.6", "more than 1"),
            ("close=3:0.1", "no parameter"),
            ("stall=-1:0.1", "not a number"),
        ] {
            let e = FaultPlan::parse(spec, 0).unwrap_err();
            assert!(e.to_string().contains(needle), "{spec}: {e}");
        }
        assert!(FaultPlan::from_query("faults=close&seed=x").is_err());
        assert!(FaultPlan::from_query("fault=close").is_err());
    }

    #[test]
    fn fractions_hold_and_the_seed_decides() {
        let plan = FaultPlan::from_query("faults=reset:0.1,http_500:0.3&seed=42").unwrap();
        let picks: Vec<_> = (0..20_000).map(|i| plan.pick(i)).collect();
        let count = |f: Fault| picks.iter().filter(|p| **p == Some(f)).count() as f64 / 20_000.0;
        assert!((count(Fault::Reset(2)) - 0.1).abs() < 0.01);
        assert!((count(Fault::Internal) - 0.3).abs() < 0.01);
        let again: Vec<_> = (0..20_000).map(|i| plan.pick(i)).collect();
        assert_eq!(picks, again);
        let other = FaultPlan { seed: 43, ..plan };
        assert_ne!(
            picks,
            (0..20_000).map(|i| other.pick(i)).collect::<Vec<_>>()
        );
        assert_eq!(FaultPlan::always(Fault::Close).pick(7), Some(Fault::Close));
        let late = FaultPlan::from_query("faults=close&from=5").unwrap();
        assert_eq!((late.pick(4), late.pick(5)), (None, Some(Fault::Close)));
        assert_eq!(FaultPlan::none().pick(7), None);
    }

    #[test]
    fn query_reads_jitter_with_the_seed() {
        let p = FaultPlan::from_query("jitter=0.4&jitter_s=2&seed=9").unwrap();
        assert_eq!(
            (p.jitter.amplitude, p.jitter.period_s, p.jitter.seed),
            (0.4, 2.0, 9)
        );
        assert!(p.is_empty(), "jitter alone faults no request");
        assert_eq!(
            FaultPlan::from_query("seed=9").unwrap().jitter.amplitude,
            0.0
        );
        let e = FaultPlan::from_query("jitter=1.5").unwrap_err();
        assert_eq!(e.reason, FaultSpecProblem::Jitter);
        assert!(e.to_string().contains("jitter="), "{e}");
    }
}
