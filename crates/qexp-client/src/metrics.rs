//! Server-side counters from a Prometheus `/metrics` endpoint: a parser for
//! the text exposition format and snapshots of every counter; the deltas
//! between two snapshots are mapped onto engine-neutral counters in
//! [`crate::counters`] (declared in qexp-types).
//!
//! Why a parser of our own: the common crate (`prometheus-parse` 0.2.5)
//! matches metric names with `\w+`, so it silently drops every name with a
//! colon — and every engine here namespaces with one (`vllm:`, `llamacpp:`,
//! `sglang:`). What qexp needs is small: sample lines, labels with escaped
//! quotes, `# TYPE` lines.

use crate::client::Client;
/// A snapshot of counters; declared in qexp-types beside the counters it feeds.
pub use qexp_types::Counters;
use std::collections::BTreeMap;
use std::time::Duration;

/// One parsed sample line.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Metric name as written (`vllm:prefix_cache_hits_total`, `…_bucket`).
    pub name: String,
    /// Labels in the order written.
    pub labels: Vec<(String, String)>,
    /// The value.
    pub value: f64,
}

impl Sample {
    /// `name{k="v",…}` with labels sorted: a stable key for one series.
    pub fn series_key(&self) -> String {
        if self.labels.is_empty() {
            return self.name.clone();
        }
        let mut l: Vec<_> = self.labels.iter().collect();
        l.sort();
        let inner: Vec<String> = l.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
        format!("{}{{{}}}", self.name, inner.join(","))
    }
}

/// A parsed exposition: samples plus the declared type of each family.
#[derive(Debug, Clone, Default)]
pub struct Exposition {
    /// Sample lines in order.
    pub samples: Vec<Sample>,
    /// `# TYPE` per family name (`counter`, `gauge`, `histogram`, …).
    pub types: BTreeMap<String, String>,
}

impl Exposition {
    /// Parses Prometheus text format; lines that do not parse are skipped.
    pub fn parse(text: &str) -> Exposition {
        let mut out = Exposition::default();
        for line in text.lines() {
            let line = line.trim();
            if let Some(rest) = line.strip_prefix('#') {
                let mut words = rest.split_whitespace();
                if words.next() == Some("TYPE") {
                    if let (Some(name), Some(kind)) = (words.next(), words.next()) {
                        out.types.insert(name.to_string(), kind.to_string());
                    }
                }
                continue;
            }
            if let Some(s) = parse_sample(line) {
                out.samples.push(s);
            }
        }
        out
    }

    /// The family a sample belongs to and that family's declared type.
    fn family_type(&self, name: &str) -> Option<&str> {
        if let Some(t) = self.types.get(name) {
            return Some(t);
        }
        for suffix in ["_total", "_count", "_sum", "_bucket", "_created"] {
            if let Some(base) = name.strip_suffix(suffix) {
                if let Some(t) = self.types.get(base) {
                    return Some(t);
                }
            }
        }
        None
    }

    /// Every monotonically increasing series: counters, and the `_count` and
    /// `_sum` of histograms and summaries. Buckets, `_created` timestamps and
    /// gauges are left out.
    pub fn counters(&self) -> Counters {
        let mut out = BTreeMap::new();
        for s in &self.samples {
            if s.name.ends_with("_created") || s.name.ends_with("_bucket") {
                continue;
            }
            let keep = match self.family_type(&s.name) {
                Some("counter") => true,
                Some("histogram") | Some("summary") => {
                    s.name.ends_with("_count") || s.name.ends_with("_sum")
                }
                Some(_) => false,
                // Untyped: trust the naming convention.
                None => s.name.ends_with("_total"),
            };
            if keep && s.value.is_finite() {
                *out.entry(s.series_key()).or_insert(0.0) += s.value;
            }
        }
        Counters(out)
    }
}

/// Parses `name{labels} value [timestamp]`.
fn parse_sample(line: &str) -> Option<Sample> {
    if line.is_empty() {
        return None;
    }
    let name_end = line
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
        .unwrap_or(line.len());
    if name_end == 0 {
        return None;
    }
    let name = &line[..name_end];
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(r) = rest.strip_prefix('{') {
        let (parsed, after) = parse_labels(r)?;
        labels = parsed;
        rest = after;
    }
    let value = rest.split_whitespace().next()?;
    let value = match value {
        "NaN" | "nan" => f64::NAN,
        "+Inf" | "Inf" | "inf" => f64::INFINITY,
        "-Inf" | "-inf" => f64::NEG_INFINITY,
        v => v.parse().ok()?,
    };
    Some(Sample {
        name: name.to_string(),
        labels,
        value,
    })
}

/// Parses `k="v",…}` (after the `{`); returns the labels and the text after `}`.
fn parse_labels(mut s: &str) -> Option<(Vec<(String, String)>, &str)> {
    let mut labels = Vec::new();
    loop {
        s = s.trim_start_matches([' ', ',']);
        if let Some(after) = s.strip_prefix('}') {
            return Some((labels, after));
        }
        let eq = s.find('=')?;
        let key = s[..eq].trim().to_string();
        s = s[eq + 1..].trim_start().strip_prefix('"')?;
        let mut value = String::new();
        let mut chars = s.char_indices();
        let end = loop {
            let (i, c) = chars.next()?;
            match c {
                '\\' => match chars.next()?.1 {
                    'n' => value.push('\n'),
                    other => value.push(other),
                },
                '"' => break i,
                c => value.push(c),
            }
        };
        labels.push((key, value));
        s = &s[end + 1..];
    }
}

/// Where a server's metrics are, and how to read them.
#[derive(Debug, Clone)]
pub struct MetricsSource {
    client: Client,
    path: String,
}

impl MetricsSource {
    /// A source at `url`: an absolute `http(s)://…` URL, or a path on the client's server.
    pub fn new(client: &Client, url: &str) -> MetricsSource {
        MetricsSource {
            client: client.clone(),
            path: url.to_string(),
        }
    }

    /// The URL or path scraped.
    pub fn url(&self) -> &str {
        &self.path
    }

    /// One snapshot of every counter; `None` when the endpoint does not answer
    /// with Prometheus text that holds at least one counter.
    pub async fn scrape(&self) -> Option<Counters> {
        let text = self
            .client
            .get_text(&self.path, Duration::from_secs(10))
            .await
            .ok()??;
        let c = Exposition::parse(&text).counters();
        (!c.0.is_empty()).then_some(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_colon_names_labels_and_escapes() {
        let text = "# TYPE vllm:x_total counter\n\
                    vllm:x_total{engine=\"0\",model_name=\"a \\\"b\\\" }c\"} 12.0\n\
                    plain 3 1700000000000\n\
                    broken line\n";
        let e = Exposition::parse(text);
        assert_eq!(e.samples.len(), 2);
        assert_eq!(e.samples[0].name, "vllm:x_total");
        assert_eq!(
            e.samples[0].labels,
            vec![
                ("engine".into(), "0".into()),
                ("model_name".into(), "a \"b\" }c".into())
            ]
        );
        assert_eq!(e.samples[0].value, 12.0);
        assert_eq!(e.samples[1].value, 3.0);
    }

    #[test]
    fn counters_keep_counters_and_histogram_totals_only() {
        let text = "# TYPE a_total counter\na_total 5\n\
                    # TYPE a_created gauge\na_created 1.7e9\n\
                    # TYPE g gauge\ng 7\n\
                    # TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_count 4\nh_sum 2.5\n\
                    untyped_total 9\n";
        let c = Exposition::parse(text).counters();
        let keys: Vec<&str> = c.0.keys().map(String::as_str).collect();
        assert_eq!(keys, vec!["a_total", "h_count", "h_sum", "untyped_total"]);
    }
}
