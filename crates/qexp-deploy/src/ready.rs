//! Readiness: the process is alive, its ready path answers 2xx, and
//! `/v1/models` names the expected model, which proves the answer came from
//! the server just started and not from an old one on a reused port.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::error::{PollError, MODELS_PATH};
use crate::group::ProcessGroup;
use crate::{LaunchError, LaunchSpec};

/// The first pause between polls; it grows to [`MAX_INTERVAL`].
const FIRST_INTERVAL: Duration = Duration::from_millis(20);
/// How much each pause grows: slowly, because the wait after the server
/// binds averages half a pause, and a refused connection costs almost nothing.
const BACKOFF: f64 = 1.25;
/// The longest pause between polls.
const MAX_INTERVAL: Duration = Duration::from_millis(200);
/// How long one HTTP request of a poll may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(1);

/// How the wait for readiness ended.
pub(crate) enum Readiness {
    /// Ready after this many polls.
    Ready { polls: u32 },
    /// The leader exited before it was ready.
    Exited { status: String },
    /// The timeout passed; `last` is what the last poll saw.
    TimedOut { last: PollError },
    /// The server answered 401 or 403: waiting longer will not change it.
    Refused { last: PollError },
}

/// Polls one server for readiness.
pub(crate) struct Poller {
    client: reqwest::Client,
    base_url: String,
    ready_path: String,
    model: Option<String>,
    api_key: Option<crate::ApiKey>,
}

impl Poller {
    /// A poller for `spec`'s server at `base_url`.
    pub(crate) fn new(base_url: &str, spec: &LaunchSpec) -> Result<Self, LaunchError> {
        let client = reqwest::Client::builder()
            .no_proxy()
            .connect_timeout(REQUEST_TIMEOUT)
            .timeout(REQUEST_TIMEOUT)
            .build()
            .map_err(LaunchError::Client)?;
        Ok(Self {
            client,
            base_url: base_url.to_owned(),
            ready_path: spec.ready_path.clone(),
            model: spec.model.clone(),
            api_key: spec.api_key.clone(),
        })
    }

    /// Polls until the server is ready, its leader exits, or `timeout` passes.
    pub(crate) async fn wait(&self, group: &mut ProcessGroup, timeout: Duration) -> Readiness {
        let deadline = Instant::now() + timeout;
        let mut interval = FIRST_INTERVAL;
        let mut polls = 0u32;
        loop {
            if let Some(status) = group.exit_status() {
                return Readiness::Exited { status };
            }
            polls = polls.saturating_add(1);
            let last = match self.poll().await {
                Ok(()) => return Readiness::Ready { polls },
                Err(
                    last @ PollError::Status {
                        status: 401 | 403, ..
                    },
                ) => return Readiness::Refused { last },
                Err(last) => last,
            };
            let now = Instant::now();
            if now >= deadline {
                return Readiness::TimedOut { last };
            }
            tokio::time::sleep(interval.min(deadline - now)).await;
            interval = interval.mul_f64(BACKOFF).min(MAX_INTERVAL);
        }
    }

    /// One poll: `Ok` if ready, else what stands in the way.
    async fn poll(&self) -> Result<(), PollError> {
        let ready = self.get(&self.ready_path).await?;
        let status = ready.status();
        if !status.is_success() {
            return Err(PollError::Status {
                path: self.ready_path.clone(),
                status: status.as_u16(),
            });
        }
        let models = self.get(MODELS_PATH).await?;
        let status = models.status();
        if !status.is_success() {
            return Err(PollError::Status {
                path: MODELS_PATH.to_owned(),
                status: status.as_u16(),
            });
        }
        let body: Value = models.json().await.map_err(|e| PollError::NotJson {
            cause: e.to_string(),
        })?;
        check_models(&body, self.model.as_deref())
    }

    async fn get(&self, path: &str) -> Result<reqwest::Response, PollError> {
        let url = format!("{}{path}", self.base_url);
        let mut request = self.client.get(&url);
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(&key.0);
        }
        request.send().await.map_err(|e| describe(path, &e))
    }
}

/// What a failed request says, down to its root cause ("connection refused").
fn describe(path: &str, error: &reqwest::Error) -> PollError {
    let path = path.to_owned();
    if error.is_timeout() {
        return PollError::TimedOut {
            path,
            timeout_s: REQUEST_TIMEOUT.as_secs_f64(),
        };
    }
    let mut root: &dyn std::error::Error = error;
    while let Some(source) = root.source() {
        root = source;
    }
    let cause = root.to_string();
    if cause.to_ascii_lowercase().contains("refused") {
        PollError::Refused { path }
    } else {
        PollError::Failed { path, cause }
    }
}

/// Whether a `/v1/models` body lists `model` (or, if `None`, any model).
fn check_models(body: &Value, model: Option<&str>) -> Result<(), PollError> {
    let Some(data) = body.get("data").and_then(Value::as_array) else {
        return Err(PollError::NoData);
    };
    let ids: Vec<&str> = data
        .iter()
        .filter_map(|m| m.get("id").and_then(Value::as_str))
        .collect();
    match model {
        None if ids.is_empty() => Err(PollError::NoModel),
        None => Ok(()),
        Some(want) if ids.contains(&want) => Ok(()),
        Some(want) => Err(PollError::OtherModel {
            listed: ids.into_iter().map(str::to_owned).collect(),
            want: want.to_owned(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn models_must_name_the_expected_one() {
        let body = json!({"object": "list", "data": [{"id": "a"}, {"id": "b"}]});
        assert_eq!(check_models(&body, Some("b")), Ok(()));
        assert_eq!(check_models(&body, None), Ok(()));
        let other = check_models(&body, Some("x")).map_err(|e| e.to_string());
        assert_eq!(
            other,
            Err("the model list names [a, b], not `x`".to_owned())
        );
    }

    #[test]
    fn empty_or_malformed_lists_are_not_ready() {
        assert_eq!(
            check_models(&json!({"data": []}), None),
            Err(PollError::NoModel)
        );
        let no_list = check_models(&json!({"models": ["a"]}), None).map_err(|e| e.to_string());
        assert_eq!(
            no_list,
            Err("GET /v1/models answered without a `data` list".to_owned())
        );
        assert!(check_models(&json!({"data": [{"name": "a"}]}), Some("a")).is_err());
    }
}
