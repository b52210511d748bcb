//! Multi-turn sessions: closed-loop concurrency where a worker holds one
//! conversation at a time and sends its turns in order. Each turn's request
//! carries the conversation so far (the user messages and the answers
//! actually received); after an answer the session thinks for the plan's
//! think time, then sends its next turn. An answer that calls tools is
//! answered in the next turn: that turn's prompt goes back as the first
//! call's result (a canned `{"ok": true}` for any other), and the
//! conversation continues from the results. A turn that fails ends its
//! session: the turns after it are recorded as `skipped`, never sent.

use crate::backend::Backend;
use crate::scheduler::{run_workers, send, unix_now, Done, Finished, Job};
use crate::workload::Planned;
use crate::Cancel;
use qexp_client::{ErrorClass, Message, Outcome, RequestError, Role, SentFunction, SentToolCall};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// Runs `sessions` (each a list of turns, in order) with `concurrency`
/// sessions in flight; calls `on_done` as each turn finishes.
pub(crate) async fn run_sessions<B: Backend>(
    backend: Arc<B>,
    sessions: Vec<Vec<Job>>,
    concurrency: u32,
    think: Duration,
    cancel: Cancel,
    on_done: impl FnMut(&Finished),
) -> Vec<Finished> {
    let work = move |turns: Vec<Job>, done: Done, cancel: Cancel| {
        let backend = backend.clone();
        async move { converse(&*backend, turns, think, done, cancel).await }
    };
    run_workers(sessions, concurrency, cancel, work, on_done).await
}

/// Sends one session's turns in order; false when the run should stop.
async fn converse<B: Backend>(
    backend: &B,
    turns: Vec<Job>,
    think: Duration,
    done: Done,
    mut cancel: Cancel,
) -> bool {
    let mut history: Vec<Message> = Vec::new();
    // The tool calls of the last answer, which the next turn answers.
    let mut calls: Vec<SentToolCall> = Vec::new();
    let mut failed_turn: Option<usize> = None;
    let last = turns.len().saturating_sub(1);
    for (k, job) in turns.into_iter().enumerate() {
        if *cancel.borrow() {
            return false;
        }
        if let Some(f) = failed_turn {
            let skipped = Finished {
                index: job.index,
                scheduled_unix_s: unix_now(),
                outcome: skipped(f + 1),
            };
            if done.send(skipped).is_err() {
                return false;
            }
            continue;
        }
        let mut request = job.request;
        let prompt = request.prompt.clone();
        // The last answer's tool calls are answered with this turn's
        // prompt as the first call's result; the conversation continues
        // from the results.
        let answers_calls = !calls.is_empty();
        for (i, call) in std::mem::take(&mut calls).into_iter().enumerate() {
            let content = if i == 0 {
                prompt.clone()
            } else {
                CANNED.to_string()
            };
            history.push(Message {
                tool_call_id: Some(call.id),
                ..Message::text(Role::Tool, content)
            });
        }
        request.history = Some(history.clone());
        let f = send(backend, job.index, request, cancel.clone()).await;
        // The answer goes into the conversation; its row keeps the text
        // only where the plan's `keep_answers` says so.
        let o = &f.outcome;
        // A tool call alone may come without text.
        let answer = match (&o.text, o.ok()) {
            (Some(text), true) => Some(text.clone()),
            (None, true) if !o.tool_calls.is_empty() => Some(String::new()),
            _ => None,
        };
        match answer {
            Some(answer) => {
                if !answers_calls {
                    history.push(Message::text(Role::User, prompt));
                }
                calls = sent_calls(k, &o.tool_calls);
                history.push(Message {
                    tool_calls: calls.clone(),
                    ..Message::text(Role::Assistant, answer)
                });
            }
            None => failed_turn = Some(k),
        }
        if done.send(f).is_err() {
            return false;
        }
        if k < last && failed_turn.is_none() && !think.is_zero() {
            tokio::select! {
                _ = tokio::time::sleep(think) => {}
                _ = cancel.wait_for(|c| *c) => return false,
            }
        }
    }
    true
}

/// The result of a tool call after an answer's first (which gets the turn's prompt).
const CANNED: &str = "{\"ok\": true}";

/// An answer's tool calls as the conversation resends them, each with an
/// id of its turn `k` (from 0) and place.
fn sent_calls(k: usize, calls: &[qexp_plan::structured::ToolCall]) -> Vec<SentToolCall> {
    calls
        .iter()
        .enumerate()
        .map(|(i, c)| SentToolCall {
            id: format!("call_{}_{i}", k + 1),
            kind: "function".into(),
            function: SentFunction {
                name: c.name.clone(),
                arguments: c.arguments.clone(),
            },
        })
        .collect()
}

/// The row of a turn not sent because turn `failed` (from 1) of its session failed.
fn skipped(failed: usize) -> Outcome {
    Outcome {
        sent_unix_s: unix_now(),
        error: Some(RequestError {
            class: ErrorClass::Skipped,
            message: format!("not sent: turn {failed} of this conversation failed"),
        }),
        ..Outcome::default()
    }
}

/// Fills in what each later turn of `done` was planned to be, now that the
/// turn before it is known: its prompt is that turn's prompt and answer (as
/// the server counted them) plus its own user message (as a lone prompt)
/// plus `overhead` (what the server's chat template adds to a turn beyond
/// those, [`qexp_client::Counter::turn_overhead`]), and the plan expects
/// the server to find that whole earlier conversation in its prefix cache.
pub(crate) fn plan_turns(planned: &mut BTreeMap<u32, Planned>, done: &[Finished], overhead: i64) {
    let by_index: BTreeMap<u32, &Outcome> = done.iter().map(|f| (f.index, &f.outcome)).collect();
    let indices: Vec<u32> = planned.keys().copied().collect();
    for index in indices {
        let Some(prev_index) = index.checked_sub(1) else {
            continue;
        };
        let (Some(this), Some(prev)) = (planned.get(&index), planned.get(&prev_index)) else {
            continue;
        };
        if this.turn.is_none_or(|t| t < 2) {
            continue;
        }
        let outcome = by_index.get(&prev_index);
        let prompt = outcome
            .and_then(|o| o.usage.prompt_tokens)
            .unwrap_or(prev.input_tokens);
        let answer = outcome.map_or(prev.output_tokens, |o| o.output_tokens());
        let before = prompt.saturating_add(answer);
        let user = this.input_tokens;
        let total = i64::from(before.saturating_add(user)) + overhead;
        if let Some(this) = planned.get_mut(&index) {
            this.input_tokens = u32::try_from(total.max(0)).unwrap_or(u32::MAX);
            this.cached_tokens = before;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use qexp_client::GenRequest;
    use qexp_plan::ApiKind;
    use std::sync::Mutex;

    /// Answers `re: <prompt>` after 100 ms, fails prompts that say `fail`,
    /// and records every conversation it was sent.
    #[derive(Default)]
    struct Echo {
        seen: Mutex<Vec<Vec<String>>>,
    }

    impl Backend for Echo {
        async fn send(&self, req: GenRequest) -> Outcome {
            let mut said: Vec<String> = req
                .history
                .iter()
                .flatten()
                .map(|m| m.content.clone())
                .collect();
            said.push(req.prompt.clone());
            self.seen.lock().unwrap().push(said);
            tokio::time::sleep(Duration::from_millis(100)).await;
            if req.prompt.contains("fail") {
                return Outcome {
                    error: Some(RequestError {
                        class: ErrorClass::HttpStatus,
                        message: "HTTP 500".into(),
                    }),
                    ..Outcome::default()
                };
            }
            Outcome {
                content_chunks: 1,
                text: req.history.as_ref().map(|_| format!("re: {}", req.prompt)),
                ..Outcome::default()
            }
        }
    }

    fn session(first: u32, prompts: &[&str]) -> Vec<Job> {
        prompts
            .iter()
            .zip(first..)
            .map(|(p, index)| Job {
                index,
                request: GenRequest {
                    api: ApiKind::Chat,
                    model: "m".into(),
                    prompt: (*p).into(),
                    max_tokens: 5,
                    extra: Default::default(),
                    history: None,
                    batch: 1,
                    headers: Vec::new(),
                    images: Default::default(),
                },
            })
            .collect()
    }

    #[tokio::test(start_paused = true)]
    async fn turns_carry_the_conversation_and_a_failure_ends_its_session() {
        let echo = Arc::new(Echo::default());
        let (_tx, rx) = tokio::sync::watch::channel(false);
        let sessions = vec![
            session(0, &["a1", "a2", "a3"]),
            session(3, &["b1", "fail", "b3"]),
        ];
        let start = tokio::time::Instant::now();
        let think = Duration::from_millis(50);
        let done = run_sessions(echo.clone(), sessions, 2, think, rx, |_| {}).await;
        // Two sessions side by side; session a: 3 × 100 ms + 2 × 50 ms of thinking.
        assert_eq!(start.elapsed(), Duration::from_millis(400));
        let classes: Vec<Option<ErrorClass>> = done
            .iter()
            .map(|f| f.outcome.error.as_ref().map(|e| e.class))
            .collect();
        use ErrorClass::{HttpStatus, Skipped};
        assert_eq!(
            classes,
            [None, None, None, None, Some(HttpStatus), Some(Skipped)]
        );
        let mut seen = echo.seen.lock().unwrap().clone();
        seen.sort();
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            seen,
            [
                s(&["a1"]),
                s(&["a1", "re: a1", "a2"]),
                s(&["a1", "re: a1", "a2", "re: a2", "a3"]),
                s(&["b1"]),
                s(&["b1", "re: b1", "fail"]),
            ],
            "b3 is never sent"
        );
    }

    /// Calls `lookup` with the prompt as its argument on every turn, and
    /// records each request's history.
    #[derive(Default)]
    struct Caller {
        seen: Mutex<Vec<Vec<Message>>>,
    }

    impl Backend for Caller {
        async fn send(&self, req: GenRequest) -> Outcome {
            self.seen
                .lock()
                .unwrap()
                .push(req.history.clone().unwrap_or_default());
            Outcome {
                content_chunks: 1,
                text: None,
                tool_calls: vec![qexp_plan::structured::ToolCall {
                    name: "lookup".into(),
                    arguments: format!("{{\"q\": \"{}\"}}", req.prompt),
                }],
                ..Outcome::default()
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_tool_call_is_answered_with_the_next_turns_prompt_and_the_session_goes_on() {
        let caller = Arc::new(Caller::default());
        let (_tx, rx) = tokio::sync::watch::channel(false);
        let sessions = vec![session(0, &["t1", "t2", "t3"])];
        let done = run_sessions(caller.clone(), sessions, 1, Duration::ZERO, rx, |_| {}).await;
        assert!(done.iter().all(|f| f.outcome.ok()), "every turn is sent");
        let seen = caller.seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 3);
        assert!(seen[0].is_empty());
        // Turn 2: the user's t1, the call it made, and t2 as its result;
        // the client sends no user message after a result.
        let turn2 = &seen[1];
        let roles: Vec<Role> = turn2.iter().map(|m| m.role).collect();
        assert_eq!(roles, [Role::User, Role::Assistant, Role::Tool]);
        assert_eq!(turn2[0].content, "t1");
        let call = &turn2[1].tool_calls[0];
        assert_eq!(
            (call.id.as_str(), call.function.name.as_str()),
            ("call_1_0", "lookup")
        );
        assert_eq!(call.function.arguments, r#"{"q": "t1"}"#);
        assert_eq!(turn2[2].tool_call_id.as_deref(), Some("call_1_0"));
        assert_eq!(turn2[2].content, "t2");
        // Turn 3 goes on from there: t2's result answered by a call on t2.
        let roles: Vec<Role> = seen[2].iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [
                Role::User,
                Role::Assistant,
                Role::Tool,
                Role::Assistant,
                Role::Tool
            ]
        );
        assert_eq!(seen[2][3].tool_calls[0].id, "call_2_0");
        assert_eq!(seen[2][4].content, "t3");
    }
}
