//! OpenAI-compatible request bodies and response JSON.
//!
//! Unknown request fields (temperature, top_p, ...) are accepted and ignored;
//! `ignore_eos` keeps [`crate::SimProfile::stop_share`] from ending an answer early.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{json, Value};

use crate::{reading, tokens};

/// `max_tokens` when the request names none (OpenAI's legacy completions default).
pub(crate) const DEFAULT_MAX_TOKENS: u32 = 16;

/// `POST /v1/completions` body.
#[derive(Debug, Deserialize)]
pub(crate) struct CompletionRequest {
    model: Option<String>,
    prompt: Prompt,
    #[serde(flatten)]
    gen: GenOptions,
}

/// `POST /v1/chat/completions` body.
#[derive(Debug, Deserialize)]
pub(crate) struct ChatRequest {
    model: Option<String>,
    messages: Vec<Message>,
    tools: Option<Value>,
    tool_choice: Option<Value>,
    response_format: Option<Value>,
    #[serde(flatten)]
    gen: GenOptions,
}

/// `POST /tokenize` body (vLLM style): a prompt or chat messages.
#[derive(Debug, Deserialize)]
pub(crate) struct TokenizeRequest {
    prompt: Option<Prompt>,
    messages: Option<Vec<Message>>,
}

#[derive(Debug, Default, Deserialize)]
struct GenOptions {
    #[serde(default)]
    stream: bool,
    stream_options: Option<StreamOptions>,
    max_tokens: Option<u32>,
    max_completion_tokens: Option<u32>,
    /// vLLM's and llama.cpp's: generate to `max_tokens` whatever the model says.
    #[serde(default)]
    ignore_eos: bool,
    /// vLLM's request priority (lower is served first); 0 when absent.
    priority: Option<i64>,
}

#[derive(Debug, Deserialize)]
struct StreamOptions {
    #[serde(default)]
    include_usage: bool,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Prompt {
    Text(String),
    Batch(Vec<String>),
    Ids(Vec<u32>),
}

#[derive(Debug, Deserialize)]
struct Message {
    #[serde(default)]
    content: Option<Content>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Content {
    Text(String),
    Parts(Vec<Part>),
}

/// A content part: text, or an image as a data URL (other kinds count
/// zero tokens).
#[derive(Debug, Deserialize)]
struct Part {
    text: Option<String>,
    image_url: Option<ImageUrl>,
}

#[derive(Debug, Deserialize)]
struct ImageUrl {
    url: String,
}

/// How the simulator turns a chat request's images into prompt tokens.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Vision {
    /// Chat-template tokens per message.
    pub per_message: u32,
    /// Pixels per side of one image token's patch.
    pub patch_px: u32,
    /// Images a prompt may carry (None: any number).
    pub max_images: Option<u32>,
}

/// Whether a request comes from the chat or the legacy completions endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Chat,
    Completion,
}

/// What the engine and the response writer need from a generation request.
#[derive(Debug, Clone)]
pub(crate) struct Job {
    pub kind: Kind,
    pub model: String,
    pub prompt_tokens: u32,
    /// The prompt's token ids, chat template included: what the prefix cache keys on.
    pub prompt_ids: Arc<[u32]>,
    /// Prompt tokens the prefix cache served, set by the engine before the first token.
    pub cached_tokens: Arc<AtomicU32>,
    /// What the answer's text is drawn from: a hash of `prompt_ids`.
    pub seed: u64,
    /// The correct result of the prompt's last arithmetic item, if it has one.
    pub arithmetic: Option<i128>,
    /// Sequences holding a batch slot (prefilling or decoding), this one
    /// included, when the engine admitted it; set before the first token.
    pub batch: Arc<AtomicU32>,
    pub max_tokens: u32,
    pub stream: bool,
    pub include_usage: bool,
    /// The answer's form (a tool call, JSON), when the request asks one.
    pub form: Option<crate::form::Form>,
    /// vLLM's `priority`: while the batch is full, lower values are admitted first.
    pub priority: i64,
    /// Of `prompt_tokens`, the images' (one per patch).
    pub image_tokens: u32,
    /// The request asked for every answer to run to `max_tokens`.
    pub ignore_eos: bool,
    /// The model ended the answer before the length asked for (set by
    /// [`Job::stop_early`]): `max_tokens` is then the answer's length, and
    /// its finish reason `"stop"`.
    pub stopped: bool,
}

impl Job {
    fn new(
        kind: Kind,
        model: Option<String>,
        default_model: &str,
        prompt_ids: Vec<u32>,
        arithmetic: Option<i128>,
        gen: GenOptions,
    ) -> Job {
        Job {
            kind,
            model: model.unwrap_or_else(|| default_model.to_owned()),
            prompt_tokens: u32::try_from(prompt_ids.len()).unwrap_or(u32::MAX),
            seed: reading::seed(&prompt_ids),
            arithmetic,
            batch: Arc::default(),
            prompt_ids: prompt_ids.into(),
            cached_tokens: Arc::default(),
            max_tokens: gen
                .max_completion_tokens
                .or(gen.max_tokens)
                .unwrap_or(DEFAULT_MAX_TOKENS),
            stream: gen.stream,
            include_usage: gen.stream_options.is_some_and(|o| o.include_usage),
            form: None,
            priority: gen.priority.unwrap_or(0),
            image_tokens: 0,
            ignore_eos: gen.ignore_eos,
            stopped: false,
        }
    }

    /// Ends the answer early where the model would (a share `stop_share`
    /// of prompts, [`crate::SimProfile::stop_share`]), unless the request
    /// set `ignore_eos` or asks for a form (a tool call or JSON, which the
    /// simulator pads to the length asked for: cut short, it would not
    /// parse).
    pub(crate) fn stop_early(&mut self, stop_share: f64) {
        if self.ignore_eos || self.form.is_some() {
            return;
        }
        if let Some(n) = crate::answer::stop_length(self.seed, self.max_tokens, stop_share) {
            self.max_tokens = n;
            self.stopped = true;
        }
    }

    /// Why the answer ended: `"stop"` where the model ended it, else `"length"`.
    fn finish_reason(&self) -> &'static str {
        if self.stopped {
            "stop"
        } else {
            "length"
        }
    }
}

impl Job {
    /// A job that only prefills `prompt_ids` (one token generated, not
    /// streamed): what an embeddings or rerank request costs the engine.
    pub(crate) fn prefill_only(
        model: Option<String>,
        default_model: &str,
        prompt_ids: Vec<u32>,
    ) -> Job {
        let gen = GenOptions {
            max_tokens: Some(1),
            ..GenOptions::default()
        };
        Job::new(
            Kind::Completion,
            model,
            default_model,
            prompt_ids,
            None,
            gen,
        )
    }
}

/// Why a request's prompt cannot be turned into tokens; the text is the
/// 400 answer's message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PromptError {
    /// More than one prompt in a completion request.
    #[error("batched prompts are not supported; send one prompt per request")]
    Batched,
    /// A chat request without messages.
    #[error("`messages` must not be empty")]
    NoMessages,
    /// A tokenize request with both or neither of `prompt` and `messages`.
    #[error("give exactly one of `prompt` and `messages`")]
    PromptOrMessages,
    /// An image part whose URL is not a base64 data URL of an image.
    #[error("an image_url part is not a base64 data URL of a PNG, JPEG, WebP or GIF image")]
    Image,
    /// More images than the server takes per prompt.
    #[error("too many images in the prompt: at most {0} may be given (limit_mm_per_prompt)")]
    TooManyImages(u32),
}

impl CompletionRequest {
    /// The generation job, or why the prompt is unsupported.
    pub(crate) fn into_job(self, default_model: &str) -> Result<Job, PromptError> {
        let mut ids = Vec::new();
        self.prompt.ids(&mut ids)?;
        let arithmetic = self.prompt.single()?.and_then(reading::arithmetic);
        Ok(Job::new(
            Kind::Completion,
            self.model,
            default_model,
            ids,
            arithmetic,
            self.gen,
        ))
    }
}

impl ChatRequest {
    /// The generation job, or why the messages are unsupported.
    pub(crate) fn into_job(self, default_model: &str, vision: Vision) -> Result<Job, PromptError> {
        let (ids, image_tokens) = chat_ids(&self.messages, vision)?;
        // The last item of the last message that has one.
        let arithmetic = self
            .messages
            .iter()
            .flat_map(Message::texts)
            .rev()
            .find_map(reading::arithmetic);
        let form = crate::form::Form::of(
            self.tools.as_ref(),
            self.tool_choice.as_ref(),
            self.response_format.as_ref(),
        );
        Ok(Job {
            form,
            image_tokens,
            ..Job::new(
                Kind::Chat,
                self.model,
                default_model,
                ids,
                arithmetic,
                self.gen,
            )
        })
    }
}

impl TokenizeRequest {
    /// Token ids of the prompt, or of the messages with the chat template applied.
    pub(crate) fn ids(&self, vision: Vision) -> Result<Vec<u32>, PromptError> {
        match (&self.prompt, &self.messages) {
            (Some(prompt), None) => {
                let mut ids = Vec::new();
                prompt.ids(&mut ids)?;
                Ok(ids)
            }
            (None, Some(messages)) => Ok(chat_ids(messages, vision)?.0),
            _ => Err(PromptError::PromptOrMessages),
        }
    }
}

impl Prompt {
    fn single(&self) -> Result<Option<&str>, PromptError> {
        match self {
            Prompt::Text(text) => Ok(Some(text)),
            Prompt::Batch(texts) if texts.len() == 1 => Ok(Some(&texts[0])),
            Prompt::Batch(_) => Err(PromptError::Batched),
            Prompt::Ids(_) => Ok(None),
        }
    }

    fn ids(&self, out: &mut Vec<u32>) -> Result<(), PromptError> {
        match (self.single()?, self) {
            (Some(text), _) => tokens::ids(text, out),
            (None, Prompt::Ids(ids)) => out.extend_from_slice(ids),
            (None, _) => {}
        }
        Ok(())
    }
}

impl Message {
    fn image_urls(&self) -> impl Iterator<Item = &str> {
        let parts = match &self.content {
            Some(Content::Parts(parts)) => parts.as_slice(),
            _ => &[],
        };
        parts
            .iter()
            .filter_map(|p| p.image_url.as_ref().map(|u| u.url.as_str()))
    }

    fn texts(&self) -> Vec<&str> {
        match &self.content {
            None => Vec::new(),
            Some(Content::Text(text)) => vec![text],
            Some(Content::Parts(parts)) => parts.iter().filter_map(|p| p.text.as_deref()).collect(),
        }
    }
}

/// Token ids of a chat request: each message's template tokens then its
/// words and its images' patches, then the reply primer; as many as
/// `usage.prompt_tokens` counts. Also the images' share of them.
fn chat_ids(messages: &[Message], vision: Vision) -> Result<(Vec<u32>, u32), PromptError> {
    if messages.is_empty() {
        return Err(PromptError::NoMessages);
    }
    let mut ids = Vec::new();
    let (mut images, mut image_tokens) = (0_u32, 0_usize);
    for message in messages {
        tokens::template_ids(vision.per_message, &mut ids);
        for text in message.texts() {
            tokens::ids(text, &mut ids);
        }
        for url in message.image_urls() {
            images += 1;
            let before = ids.len();
            tokens::image_ids(url, vision.patch_px, &mut ids).ok_or(PromptError::Image)?;
            image_tokens += ids.len() - before;
        }
    }
    if let Some(max) = vision.max_images.filter(|m| images > *m) {
        return Err(PromptError::TooManyImages(max));
    }
    tokens::template_ids(tokens::CHAT_PRIMER_TOKENS, &mut ids);
    Ok((ids, u32::try_from(image_tokens).unwrap_or(u32::MAX)))
}

/// Fields shared by every response object and chunk of one request.
#[derive(Debug, Clone)]
pub(crate) struct Envelope {
    pub id: String,
    pub created: u64,
    pub job: Job,
}

impl Envelope {
    fn object(&self, chunk: bool) -> &'static str {
        match (self.job.kind, chunk) {
            (Kind::Chat, true) => "chat.completion.chunk",
            (Kind::Chat, false) => "chat.completion",
            (Kind::Completion, _) => "text_completion",
        }
    }

    fn usage(&self, completion_tokens: u32) -> Value {
        let prompt = self.job.prompt_tokens;
        let cached = self.job.cached_tokens.load(Ordering::Relaxed);
        json!({
            "prompt_tokens": prompt,
            "completion_tokens": completion_tokens,
            "total_tokens": u64::from(prompt) + u64::from(completion_tokens),
            "prompt_tokens_details": {"cached_tokens": cached},
        })
    }

    /// A streamed chunk carrying `reasoning` (chat only) and `text`; `first`
    /// adds the chat role, `last` the finish reason.
    pub(crate) fn chunk(&self, reasoning: &str, text: &str, first: bool, last: bool) -> Value {
        self.chunk_of(reasoning, text, None, (first, last))
    }

    /// A streamed chunk whose `text` is a piece of the arguments of a call
    /// of `tool` (`opens`: the call's first piece, which names it).
    pub(crate) fn tool_chunk(
        &self,
        reasoning: &str,
        text: &str,
        (tool, opens): (&str, bool),
        first: bool,
        last: bool,
    ) -> Value {
        self.chunk_of(reasoning, text, Some((tool, opens)), (first, last))
    }

    fn chunk_of(
        &self,
        reasoning: &str,
        text: &str,
        tool: Option<(&str, bool)>,
        (first, last): (bool, bool),
    ) -> Value {
        let finish = last.then_some(if tool.is_some() {
            "tool_calls"
        } else {
            self.job.finish_reason()
        });
        let choice = match self.job.kind {
            Kind::Chat => {
                let mut delta = serde_json::Map::new();
                if first {
                    delta.insert("role".into(), json!("assistant"));
                }
                if !reasoning.is_empty() {
                    delta.insert("reasoning_content".into(), json!(reasoning));
                }
                match tool {
                    Some((name, opens)) if !text.is_empty() => {
                        let call = match opens {
                            true => {
                                json!({"index": 0, "id": format!("call-{}", self.id), "type": "function",
                                           "function": {"name": name, "arguments": text}})
                            }
                            false => json!({"index": 0, "function": {"arguments": text}}),
                        };
                        delta.insert("tool_calls".into(), json!([call]));
                    }
                    Some(_) => {}
                    None if reasoning.is_empty() || !text.is_empty() => {
                        delta.insert("content".into(), json!(text));
                    }
                    None => {}
                }
                json!({"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish})
            }
            Kind::Completion => {
                json!({"index": 0, "text": format!("{reasoning}{text}"), "logprobs": null, "finish_reason": finish})
            }
        };
        json!({"id": self.id, "object": self.object(true), "created": self.created, "model": self.job.model, "choices": [choice]})
    }

    /// The trailing usage chunk of a stream (`stream_options.include_usage`).
    pub(crate) fn usage_chunk(&self, completion_tokens: u32) -> Value {
        json!({"id": self.id, "object": self.object(true), "created": self.created, "model": self.job.model, "choices": [], "usage": self.usage(completion_tokens)})
    }

    /// The whole non-streamed response: `text` as the message's content,
    /// or, where the answer calls `tool`, as that call's arguments.
    pub(crate) fn response(&self, text: &str, tool: Option<&str>, completion_tokens: u32) -> Value {
        let choice = match (self.job.kind, tool) {
            (Kind::Chat, Some(name)) => {
                let call = json!({"id": format!("call-{}", self.id), "type": "function",
                                  "function": {"name": name, "arguments": text}});
                json!({"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": [call]}, "logprobs": null, "finish_reason": "tool_calls"})
            }
            (Kind::Chat, None) => {
                json!({"index": 0, "message": {"role": "assistant", "content": text}, "logprobs": null, "finish_reason": self.job.finish_reason()})
            }
            (Kind::Completion, _) => {
                json!({"index": 0, "text": text, "logprobs": null, "finish_reason": self.job.finish_reason()})
            }
        };
        json!({"id": self.id, "object": self.object(false), "created": self.created, "model": self.job.model, "choices": [choice], "usage": self.usage(completion_tokens)})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vision(per_message: u32) -> Vision {
        Vision {
            per_message,
            patch_px: 28,
            max_images: None,
        }
    }

    fn chat(body: &str) -> Result<Job, String> {
        serde_json::from_str::<ChatRequest>(body)
            .map_err(|e| e.to_string())?
            .into_job("sim-x", vision(4))
            .map_err(|e| e.to_string())
    }

    fn completion(body: &str) -> Result<Job, String> {
        serde_json::from_str::<CompletionRequest>(body)
            .map_err(|e| e.to_string())?
            .into_job("sim-x")
            .map_err(|e| e.to_string())
    }

    #[test]
    fn chat_counts_words_plus_template() {
        let job = chat(r#"{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"a b c"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="}}]}],"max_completion_tokens":9,"max_tokens":3,"temperature":0.7}"#).unwrap();
        // Words, the template's tokens, and one patch of the 1 × 1 image.
        assert_eq!(job.prompt_tokens, 2 + 3 + 3 + 2 * 4 + 1);
        assert_eq!(job.image_tokens, 1);
        assert_eq!(job.max_tokens, 9);
        assert_eq!(job.model, "sim-x");
        assert!(!job.stream && !job.include_usage);
        assert!(chat(r#"{"messages":[]}"#).unwrap_err().contains("empty"));
    }

    #[test]
    fn completion_prompt_forms() {
        let job = completion(r#"{"model":"m","prompt":"one two  three","stream":true,"stream_options":{"include_usage":true}}"#).unwrap();
        assert_eq!(
            (job.prompt_tokens, job.max_tokens, job.model.as_str()),
            (3, DEFAULT_MAX_TOKENS, "m")
        );
        assert!(job.stream && job.include_usage);
        assert_eq!(
            completion(r#"{"prompt":["x y"]}"#).unwrap().prompt_tokens,
            2
        );
        assert_eq!(
            completion(r#"{"prompt":[5,6,7,8]}"#).unwrap().prompt_tokens,
            4
        );
        assert!(completion(r#"{"prompt":["a","b"]}"#)
            .unwrap_err()
            .contains("batched"));
        assert!(completion(r#"{"max_tokens":3}"#).is_err());
        assert!(completion(r#"{"prompt":"a","max_tokens":-1}"#).is_err());
    }

    #[test]
    fn tokenize_matches_usage_accounting() {
        let req: TokenizeRequest =
            serde_json::from_str(r#"{"messages":[{"role":"user","content":"a b c"}]}"#).unwrap();
        assert_eq!(req.ids(vision(4)).unwrap().len(), 3 + 7);
        let req: TokenizeRequest = serde_json::from_str(r#"{"model":"m","prompt":"a b"}"#).unwrap();
        assert_eq!(req.ids(vision(4)).unwrap().len(), 2);
        let req: TokenizeRequest = serde_json::from_str(r#"{"model":"m"}"#).unwrap();
        assert!(req.ids(vision(4)).is_err());
    }
}
