//! Makes prompt lengths exact: finds how many filler words give the planned
//! token count as the *server* counts it, chat template included.

use crate::client::{Client, GenRequest};
use crate::prompt::Filler;
use qexp_plan::ApiKind;
use serde::Serialize;
use serde_json::{json, Map, Value};

/// How a token count was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CountMethod {
    /// The server's `/tokenize` endpoint (vLLM style, `count` in the answer).
    Tokenize,
    /// `usage.prompt_tokens` of a one-token probe request.
    Probe,
}

/// The result of calibrating one input length.
#[derive(Debug, Clone, Serialize)]
pub struct Calibration {
    /// Planned prompt tokens.
    pub target_tokens: u32,
    /// Filler words that give it.
    pub units: usize,
    /// What the server counted for the calibrated prompt.
    pub measured_tokens: u32,
    /// How it was counted.
    pub method: CountMethod,
    /// Counts made.
    pub probes: u32,
}

/// Why calibration failed.
#[derive(Debug, thiserror::Error)]
pub enum CalibrationError {
    /// The server could not count a prompt.
    #[error("cannot count prompt tokens on the server: {0}")]
    Count(String),
    /// The target is shorter than the template and nonce alone.
    #[error("input_tokens {target} is below the {floor} tokens that the chat template and nonce already take")]
    TooShort {
        /// Planned tokens.
        target: u32,
        /// Tokens of an empty prompt.
        floor: u32,
    },
    /// No word count lands within tolerance.
    #[error("could not reach {target} prompt tokens within {tolerance_pct:.1}%: the closest was {best} tokens")]
    NoConvergence {
        /// Planned tokens.
        target: u32,
        /// Closest count reached.
        best: u32,
        /// Allowed difference, percent.
        tolerance_pct: f64,
    },
}

/// Counts prompt tokens on a server.
pub struct Counter<'a> {
    client: &'a Client,
    api: ApiKind,
    model: String,
    extra: Map<String, Value>,
    method: Option<CountMethod>,
}

impl<'a> Counter<'a> {
    /// A counter for requests of this shape.
    pub fn new(
        client: &'a Client,
        api: ApiKind,
        model: &str,
        extra: &Map<String, Value>,
    ) -> Counter<'a> {
        Counter {
            client,
            api,
            model: model.to_string(),
            extra: extra.clone(),
            method: None,
        }
    }

    /// Tokens the server sees for `prompt`; tries `/tokenize` once, then probes.
    pub async fn count(&mut self, prompt: &str) -> Result<(u32, CountMethod), CalibrationError> {
        if self.method != Some(CountMethod::Probe) {
            if let Some(n) = self.tokenize(prompt).await {
                self.method = Some(CountMethod::Tokenize);
                return Ok((n, CountMethod::Tokenize));
            }
            if self.method == Some(CountMethod::Tokenize) {
                return Err(CalibrationError::Count(
                    "/tokenize stopped answering".into(),
                ));
            }
            self.method = Some(CountMethod::Probe);
        }
        self.probe(prompt).await.map(|n| (n, CountMethod::Probe))
    }

    async fn tokenize(&self, prompt: &str) -> Option<u32> {
        let body = match self.api {
            ApiKind::Chat => {
                json!({"model": self.model, "messages": [{"role": "user", "content": prompt}], "add_generation_prompt": true})
            }
            ApiKind::Completions => json!({"model": self.model, "prompt": prompt}),
        };
        let (status, v) = self.client.post_json("/tokenize", &body).await.ok()?;
        if status != 200 {
            return None;
        }
        v.get("count").and_then(Value::as_u64).map(|n| n as u32)
    }

    async fn probe(&self, prompt: &str) -> Result<u32, CalibrationError> {
        let req = GenRequest {
            api: self.api,
            model: self.model.clone(),
            prompt: prompt.to_string(),
            max_tokens: 1,
            extra: self.extra.clone(),
            history: None,
        };
        let (status, v) = self
            .client
            .post_json(req_path(self.api), &req.body(false))
            .await
            .map_err(|e| CalibrationError::Count(e.message))?;
        if status != 200 {
            let msg = v
                .pointer("/error/message")
                .and_then(Value::as_str)
                .unwrap_or("no error message");
            return Err(CalibrationError::Count(format!(
                "probe request answered HTTP {status}: {msg}"
            )));
        }
        v.pointer("/usage/prompt_tokens")
            .and_then(Value::as_u64)
            .map(|n| n as u32)
            .ok_or_else(|| {
                CalibrationError::Count("probe answer has no usage.prompt_tokens".into())
            })
    }
}

fn req_path(api: ApiKind) -> &'static str {
    match api {
        ApiKind::Chat => "/v1/chat/completions",
        ApiKind::Completions => "/v1/completions",
    }
}

/// Finds the filler length whose prompt (behind `nonce`) counts `target` tokens.
///
/// Secant search on words → tokens, which is monotone and close to linear;
/// a few counts suffice. Succeeds when within `tolerance` (a fraction).
pub async fn calibrate(
    counter: &mut Counter<'_>,
    filler: &Filler,
    nonce: &str,
    target: u32,
    tolerance: f64,
) -> Result<Calibration, CalibrationError> {
    let mut probes = 0;
    let mut measure = async |units: usize| {
        probes += 1;
        counter.count(&filler.prompt(nonce, units)).await
    };
    let (floor, method) = measure(0).await?;
    if floor >= target {
        return Err(CalibrationError::TooShort { target, floor });
    }
    let mut lo = (0usize, floor);
    let mut u = ((target - floor) as usize).min(filler.len());
    let mut best = lo;
    for _ in 0..8 {
        let (t, _) = measure(u).await?;
        if t.abs_diff(target) < best.1.abs_diff(target) {
            best = (u, t);
        }
        if t == target || u == lo.0 {
            break;
        }
        let rate = (f64::from(t) - f64::from(lo.1)) / (u as f64 - lo.0 as f64);
        if rate.is_nan() || rate <= 0.0 {
            break;
        }
        let next = (u as f64 + (f64::from(target) - f64::from(t)) / rate)
            .round()
            .max(0.0) as usize;
        lo = (u, t);
        if next == u {
            break;
        }
        u = next.min(filler.len());
    }
    let allowed = f64::from(target) * tolerance;
    if f64::from(best.1.abs_diff(target)) > allowed {
        return Err(CalibrationError::NoConvergence {
            target,
            best: best.1,
            tolerance_pct: tolerance * 100.0,
        });
    }
    Ok(Calibration {
        target_tokens: target,
        units: best.0,
        measured_tokens: best.1,
        method,
        probes,
    })
}
