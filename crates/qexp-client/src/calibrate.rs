//! Makes prompt lengths exact: finds how many filler words, and then how
//! many one-token pad words, give the planned token count as the *server*
//! counts it, chat template included.

use crate::client::{Client, GenRequest};
use crate::prompt::{Cut, Filler};
use qexp_plan::{ApiKind, InputTolerance};
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::future::Future;

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
    /// Pad words of one token each after them (0 when the words alone land on it).
    pub pad: usize,
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
    #[error(
        "could not reach {target} prompt tokens within {tolerance}: the closest was {best} tokens"
    )]
    NoConvergence {
        /// Planned tokens.
        target: u32,
        /// Closest count reached.
        best: u32,
        /// Allowed difference.
        tolerance: InputTolerance,
    },
}

impl Calibration {
    /// Where prompts of this length are cut from the filler.
    pub fn cut(&self) -> Cut {
        Cut {
            units: self.units,
            pad: self.pad,
        }
    }
}

/// Counts the tokens of a prompt as the server will: [`Counter`] asks the
/// server; tests count with a tokenizer of their own.
pub trait CountTokens {
    /// Tokens the server sees for `prompt`, and how they were counted.
    fn count(
        &mut self,
        prompt: &str,
    ) -> impl Future<Output = Result<(u32, CountMethod), CalibrationError>> + Send;
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

    async fn tokenize(&self, prompt: &str) -> Option<u32> {
        // A rerank request's length is its query and document pair as the
        // server counts it, which only a probe of the endpoint tells.
        if self.api == ApiKind::Rerank {
            return None;
        }
        let body = match self.api {
            ApiKind::Chat => {
                let mut body = json!({"model": self.model, "messages": [{"role": "user", "content": prompt}], "add_generation_prompt": true});
                // Tools are part of the prompt the chat template renders.
                if let (Some(tools), Value::Object(m)) = (self.extra.get("tools"), &mut body) {
                    m.insert("tools".into(), tools.clone());
                }
                body
            }
            ApiKind::Completions | ApiKind::Embeddings | ApiKind::Rerank => {
                json!({"model": self.model, "prompt": prompt})
            }
        };
        let (status, v) = self.client.post_json("/tokenize", &body).await.ok()?;
        if status != 200 {
            return None;
        }
        v.get("count").and_then(Value::as_u64).map(|n| n as u32)
    }

    async fn probe(&self, prompt: &str) -> Result<u32, CalibrationError> {
        self.probe_after(None, prompt).await
    }

    /// What a conversation adds to its prompt per turn beyond the answer
    /// and the next user message as a lone prompt counts: the next turn's
    /// prompt is the last one's, plus its answer, plus the new message's
    /// lone-prompt count, plus this (negative where a lone prompt carries
    /// a system prompt or tools that the conversation has once). Three
    /// probes of a chat server: a short message U alone (`F + u`), U twice
    /// in one message (`F + 2u`), and U after U and an answer U (`F + 3u +
    /// wraps`); the answer's tokens are U's.
    pub async fn turn_overhead(&self) -> Result<i64, CalibrationError> {
        const U: &str = "alpha beta gamma delta";
        let history = vec![
            crate::Message::text(crate::Role::User, U.into()),
            crate::Message::text(crate::Role::Assistant, U.into()),
        ];
        let one = self.probe_after(None, U).await?;
        let twice = self.probe_after(None, &format!("{U} {U}")).await?;
        let turn = self.probe_after(Some(history), U).await?;
        Ok(i64::from(turn) - i64::from(one) - i64::from(twice))
    }

    async fn probe_after(
        &self,
        history: Option<Vec<crate::Message>>,
        prompt: &str,
    ) -> Result<u32, CalibrationError> {
        let req = GenRequest {
            api: self.api,
            model: self.model.clone(),
            prompt: prompt.to_string(),
            max_tokens: 1,
            extra: self.extra.clone(),
            history,
            batch: 1,
            headers: Vec::new(),
            images: Default::default(),
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
        ApiKind::Embeddings => "/v1/embeddings",
        ApiKind::Rerank => "/v1/rerank",
    }
}

/// Tries `/tokenize` once, then probes.
impl CountTokens for Counter<'_> {
    async fn count(&mut self, prompt: &str) -> Result<(u32, CountMethod), CalibrationError> {
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
}

/// Pad words a calibration may add: more means the filler words are far
/// from one token each, and the secant search's closest count is kept.
const MAX_PAD: usize = 16;

/// Finds the cut of the filler whose prompt (behind `nonce`) counts `target` tokens.
///
/// A secant search on words → tokens, which is monotone and close to linear,
/// comes within a word in a few counts. A word can take several tokens, so
/// no count of words may land on `target`; then the longest cut under it is
/// topped up with one-token pad words. Succeeds when within `tolerance`.
pub async fn calibrate<C: CountTokens>(
    counter: &mut C,
    filler: &Filler,
    nonce: &str,
    target: u32,
    tolerance: InputTolerance,
) -> Result<Calibration, CalibrationError> {
    let mut search = Search {
        counter,
        filler,
        nonce,
        probes: 0,
        method: CountMethod::Probe,
    };
    let floor = search.count(Cut::default()).await?;
    if floor >= target {
        return Err(CalibrationError::TooShort { target, floor });
    }
    let mut best = search.secant(target, floor).await?;
    if best.1 != target {
        best = search.pad(target, best).await?;
    }
    if tolerance.exceeded(f64::from(target), f64::from(best.1)) {
        return Err(CalibrationError::NoConvergence {
            target,
            best: best.1,
            tolerance,
        });
    }
    Ok(Calibration {
        target_tokens: target,
        units: best.0.units,
        pad: best.0.pad,
        measured_tokens: best.1,
        method: search.method,
        probes: search.probes,
    })
}

/// One calibration's counts.
struct Search<'a, C> {
    counter: &'a mut C,
    filler: &'a Filler,
    nonce: &'a str,
    probes: u32,
    method: CountMethod,
}

impl<C: CountTokens> Search<'_, C> {
    async fn count(&mut self, cut: Cut) -> Result<u32, CalibrationError> {
        self.probes += 1;
        let (n, method) = self
            .counter
            .count(&self.filler.prompt(self.nonce, cut))
            .await?;
        self.method = method;
        Ok(n)
    }

    /// The count of filler words closest to `target` (the earlier of equals),
    /// starting from one token per word above the bare nonce's `floor`.
    async fn secant(&mut self, target: u32, floor: u32) -> Result<(Cut, u32), CalibrationError> {
        let mut lo = (0usize, floor);
        let mut u = ((target - floor) as usize).min(self.filler.len());
        let mut best = (Cut::default(), floor);
        for _ in 0..8 {
            let t = self.count(Cut::words(u)).await?;
            if t.abs_diff(target) < best.1.abs_diff(target) {
                best = (Cut::words(u), t);
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
            u = next.min(self.filler.len());
        }
        Ok(best)
    }

    /// The longest cut of words at or under `target`, topped up with pad
    /// words to it; `best` if that comes no closer.
    async fn pad(&mut self, target: u32, best: (Cut, u32)) -> Result<(Cut, u32), CalibrationError> {
        let (mut units, mut t) = (best.0.units, best.1);
        // A word past the target: step back a word at a time (each is a count).
        for _ in 0..MAX_PAD {
            if t <= target || units == 0 {
                break;
            }
            units -= 1;
            t = self.count(Cut::words(units)).await?;
        }
        if t == target {
            return Ok((Cut::words(units), t));
        }
        let mut closest = best;
        let mut pad = target.saturating_sub(t) as usize;
        // A pad word is one token on common vocabularies; where one is not,
        // a second try corrects by what the first missed.
        for _ in 0..2 {
            if pad == 0 || pad > MAX_PAD {
                break;
            }
            let cut = Cut { units, pad };
            let got = self.count(cut).await?;
            if got.abs_diff(target) < closest.1.abs_diff(target) {
                closest = (cut, got);
            }
            if got == target {
                break;
            }
            pad = (pad as i64 + i64::from(target) - i64::from(got)).max(0) as usize;
        }
        Ok(closest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prompt::nonce_for;

    /// A chat template's tokens around the content, as the tiny test model's
    /// ChatML template has (`<|im_start|>user\n` … `<|im_end|>\n<|im_start|>assistant\n`).
    const TEMPLATE: u32 = 12;

    /// Counts like a small byte-level BPE vocabulary: the nonce's words
    /// are one token each, longer filler words two to four, and a trailing
    /// space is a token of its own.
    struct SmallVocabulary;

    impl CountTokens for SmallVocabulary {
        async fn count(&mut self, prompt: &str) -> Result<(u32, CountMethod), CalibrationError> {
            let words: u32 = prompt
                .split(' ')
                .map(|w| match w.len() {
                    0 => 1,
                    1..=4 => 1,
                    n => (n as u32 - 3).min(4),
                })
                .sum();
            Ok((TEMPLATE + words, CountMethod::Tokenize))
        }
    }

    fn at(target: u32) -> Result<Calibration, CalibrationError> {
        let filler = Filler::new(7, 400);
        let nonce = nonce_for(7, 0, 0, 0, 0);
        let mut counter = SmallVocabulary;
        let fut = calibrate(
            &mut counter,
            &filler,
            &nonce,
            target,
            InputTolerance::default(),
        );
        block_on(fut)
    }

    fn block_on<F: Future>(f: F) -> F::Output {
        let rt = tokio::runtime::Builder::new_current_thread().build();
        rt.expect("a current-thread runtime").block_on(f)
    }

    #[test]
    fn short_prompts_land_on_the_planned_count_exactly() {
        let filler = Filler::new(7, 400);
        let nonce = nonce_for(7, 0, 0, 0, 0);
        for target in 30..=300 {
            let cal = at(target).unwrap_or_else(|e| panic!("{target}: {e}"));
            assert_eq!(cal.measured_tokens, target, "{cal:?}");
            // What a request sends counts what the calibration measured.
            let prompt = filler.prompt(&nonce, cal.cut());
            let (n, _) = block_on(SmallVocabulary.count(&prompt)).unwrap();
            assert_eq!(n, target, "{cal:?}");
            assert!(cal.pad <= MAX_PAD && cal.probes <= 16, "{cal:?}");
        }
    }

    #[test]
    fn words_that_land_on_the_count_need_no_pad() {
        let cals: Vec<Calibration> = (30..=300).map(|t| at(t).unwrap()).collect();
        assert!(cals.iter().any(|c| c.pad == 0));
        assert!(cals.iter().any(|c| c.pad > 0));
    }

    #[test]
    fn the_bare_nonce_counts_no_trailing_space() {
        // 16 nonce words and the template: a 28-token prompt has no filler.
        let cal = at(TEMPLATE + 17).unwrap();
        assert_eq!((cal.units, cal.pad, cal.measured_tokens), (0, 1, 29));
        assert!(matches!(
            at(TEMPLATE + 16),
            Err(CalibrationError::TooShort { floor: 28, .. })
        ));
    }
}
