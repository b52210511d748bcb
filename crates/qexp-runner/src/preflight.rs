//! Context preflight: before any load (and before calibration), check that
//! every point fits the server's context window, so a long-context sweep
//! fails in a second with the flag to change instead of after an hour with
//! HTTP 400s at its longest point.

use crate::error::RunError;
use qexp_client::Fingerprint;
use qexp_plan::{Class, Point};

/// The lengths a point's requests ask for: the point's, or, with request
/// classes, each class's (its own lengths where it has them), with the
/// point's label (and the class's name).
fn asked(p: &Point, classes: &[Class]) -> Vec<(String, u32, u32)> {
    if classes.is_empty() {
        return vec![(p.label().to_string(), p.input_tokens, p.output_tokens)];
    }
    classes
        .iter()
        .map(|c| {
            (
                format!("{} (class {})", p.label(), c.name.get_ref()),
                c.input_tokens
                    .as_ref()
                    .map_or(p.input_tokens, |t| *t.get_ref()),
                c.output_tokens
                    .as_ref()
                    .map_or(p.output_tokens, |t| *t.get_ref()),
            )
        })
        .collect()
}

/// Refuses the plan when a point (or a request class at it) needs more
/// context than the server allows. A server that reveals no limit passes
/// (its own errors are still classified).
// Called once per run, before any load: the error's size costs nothing.
#[allow(clippy::result_large_err)]
pub(crate) fn check_context(
    points: &[Point],
    classes: &[Class],
    fp: &Fingerprint,
    base_url: &str,
) -> Result<(), RunError> {
    let asked: Vec<(String, u32, u32)> = points.iter().flat_map(|p| asked(p, classes)).collect();
    let need = |(_, i, o): &&(String, u32, u32)| u64::from(*i) + u64::from(*o);
    if let Some(limit) = fp.max_context {
        if let Some(a) = asked
            .iter()
            .filter(|a| need(a) > u64::from(limit))
            .max_by_key(need)
        {
            return Err(too_small(&a.0, need(&a), limit, "context", fp, base_url));
        }
    }
    if let Some(limit) = fp.max_input {
        if let Some(a) = asked.iter().filter(|a| a.1 > limit).max_by_key(|a| a.1) {
            return Err(too_small(
                &a.0,
                u64::from(a.1),
                limit,
                "input",
                fp,
                base_url,
            ));
        }
    }
    Ok(())
}

/// Refuses the plan when a point sends more images per request than the
/// server says it takes, instead of measuring a server that refuses or
/// drops them. A server that says nothing passes.
// Called once per run, before any load: the error's size costs nothing.
#[allow(clippy::result_large_err)]
pub(crate) fn check_images(
    points: &[Point],
    fp: &Fingerprint,
    base_url: &str,
) -> Result<(), RunError> {
    let Some((limit, source)) = &fp.max_images else {
        return Ok(());
    };
    let count = |p: &Point| p.images.map_or(0, |i| i.count);
    match points
        .iter()
        .filter(|p| count(p) > *limit)
        .max_by_key(|p| count(p))
    {
        Some(p) => Err(RunError::TooManyImages {
            point: p.label().into(),
            count: count(p),
            limit: *limit,
            read_from: source.as_str().into(),
            url: base_url.into(),
        }),
        None => Ok(()),
    }
}

fn too_small(
    point: &str,
    needed: u64,
    limit: u32,
    what: &'static str,
    fp: &Fingerprint,
    base_url: &str,
) -> RunError {
    RunError::ContextTooSmall {
        point: point.into(),
        needed,
        what,
        limit,
        engine: fp.engine.as_str().into(),
        url: base_url.into(),
        limit_source: fp
            .max_context_source
            .as_deref()
            .filter(|_| what == "context")
            .unwrap_or("its input limit")
            .into(),
        flag: fp.context_flag(),
    }
}

/// For an API that answers once (embeddings, rerank): one small request
/// before any load, so a server without the endpoint is refused in one
/// sentence instead of failing every measured request.
// Called once per run, before any load: the error's size costs nothing.
#[allow(clippy::result_large_err)]
pub(crate) async fn check_endpoint(
    client: &qexp_client::Client,
    request: &qexp_client::GenRequest,
) -> Result<(), RunError> {
    if request.api.streams() {
        return Ok(());
    }
    let path = match request.api {
        qexp_plan::ApiKind::Rerank => "/v1/rerank",
        _ => "/v1/embeddings",
    };
    let refused = |status: u16, message: String| RunError::NoEndpoint {
        url: client.base_url().into(),
        path,
        api: request.api,
        status,
        message: message.into(),
    };
    let (status, answer) = client
        .post_json(path, &request.body(false))
        .await
        .map_err(|e| refused(0, e.message))?;
    if (200..300).contains(&status) {
        return Ok(());
    }
    let message = answer
        .pointer("/error/message")
        .or_else(|| answer.get("error"))
        .or_else(|| answer.get("detail"))
        .and_then(serde_json::Value::as_str)
        .unwrap_or("no error message");
    let message: String = message.chars().take(200).collect();
    Err(refused(status, message.trim_end_matches('.').to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(id: u32, input: u32, output: u32) -> Point {
        Point {
            id,
            concurrency: 1,
            input_tokens: input,
            output_tokens: output,
            requests: 1,
            warmup: 0,
            open_loop: None,
            deployment: None,
            images: None,
        }
    }

    fn vllm(limit: u32) -> Fingerprint {
        Fingerprint {
            engine: "vllm".into(),
            max_context: Some(limit),
            max_context_source: Some("/v1/models data[].max_model_len".into()),
            ..Fingerprint::default()
        }
    }

    #[test]
    fn names_the_largest_point_the_limit_and_the_flag() {
        let pts = [
            point(0, 1000, 200),
            point(1, 140_000, 200),
            point(2, 135_000, 200),
        ];
        let err = check_context(&pts, &[], &vllm(131_072), "http://127.0.0.1:8000").unwrap_err();
        let msg = err.to_string();
        assert_eq!(
            msg,
            "point c=1 in=140000 out=200 needs 140200 tokens of context, but vllm at \
             http://127.0.0.1:8000 allows 131072 (/v1/models data[].max_model_len); \
             restart the server with a larger --max-model-len, or shrink the point"
        );
        assert_eq!(msg.matches(". ").count(), 0, "one sentence: {msg}");
    }

    #[test]
    fn exactly_at_the_limit_passes_and_unknown_limits_pass() {
        let pts = [point(0, 131_000, 72)];
        assert!(check_context(&pts, &[], &vllm(131_072), "u").is_ok());
        assert!(check_context(&pts, &[], &Fingerprint::default(), "u").is_ok());
        assert!(check_context(&[point(0, 131_000, 73)], &[], &vllm(131_072), "u").is_err());
    }

    #[test]
    fn a_separate_input_cap_is_checked_too() {
        let fp = Fingerprint {
            engine: "tgi".into(),
            max_context: Some(8192),
            max_input: Some(4096),
            ..Fingerprint::default()
        };
        let msg = check_context(&[point(0, 5000, 100)], &[], &fp, "u")
            .unwrap_err()
            .to_string();
        assert!(msg.contains("needs 5000 tokens of input"), "{msg}");
        assert!(
            msg.contains("--max-input-tokens/--max-total-tokens"),
            "{msg}"
        );
    }

    #[test]
    fn a_class_with_longer_lengths_than_its_point_is_checked_by_its_own() {
        let class = |text: &str| toml::from_str::<Class>(text).unwrap();
        let classes = [
            class("name = \"chat\"\nshare = 0.5"),
            class("name = \"digest\"\nshare = 0.5\ninput_tokens = 131000\noutput_tokens = 200"),
        ];
        let pts = [point(0, 1000, 200)];
        assert!(check_context(&pts, &[], &vllm(131_072), "u").is_ok());
        let msg = check_context(&pts, &classes, &vllm(131_072), "u")
            .unwrap_err()
            .to_string();
        assert!(
            msg.starts_with("point c=1 in=1000 out=200 (class digest) needs 131200 tokens"),
            "{msg}"
        );
        assert!(check_context(&pts, &classes[..1], &vllm(131_072), "u").is_ok());
    }
}
