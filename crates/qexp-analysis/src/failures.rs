//! Failed requests by point and error class, each with how many failed, in
//! which trials, and one of their messages: what a reader needs to tell a
//! server that refused (HTTP 503, context length) from a stream that broke.

use serde::Serialize;
use std::collections::BTreeMap;

/// Measured requests of one point that failed with one error class.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FailureGroup {
    /// The point's id.
    pub point_id: u32,
    /// The error class, as stored (`stream_broken`, `http_5xx`, …).
    pub class: String,
    /// Failed requests of this class at the point, over every trial.
    pub count: u64,
    /// The trials they happened in, ascending.
    pub trials: Vec<u32>,
    /// One of their messages (the first written), as the client recorded it.
    pub message: String,
}

/// The failure groups from the failed requests counted by (point, class,
/// trial), each with its first message, by point then by count (largest
/// first).
pub(crate) fn failure_groups(
    counted: &BTreeMap<(u32, String, u32), (u64, Option<String>)>,
) -> Vec<FailureGroup> {
    let mut out: Vec<FailureGroup> = Vec::new();
    for ((point_id, class, trial), (n, message)) in counted {
        match out.last_mut() {
            Some(g) if g.point_id == *point_id && g.class == *class => {
                g.count += n;
                g.trials.push(*trial);
            }
            _ => out.push(FailureGroup {
                point_id: *point_id,
                class: class.clone(),
                count: *n,
                trials: vec![*trial],
                message: message.clone().unwrap_or_default(),
            }),
        }
    }
    out.sort_by(|a, b| a.point_id.cmp(&b.point_id).then(b.count.cmp(&a.count)));
    out
}
