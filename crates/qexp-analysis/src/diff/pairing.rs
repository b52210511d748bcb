//! Pairs the points of two runs by their plan parameters. A point's id is
//! its index in one plan's expansion, so it says nothing about the other
//! run; the parameters (concurrency, input and output length, an open-loop
//! point's load) do.

use crate::metrics::PointSummary;
use qexp_plan::Point;
use serde::Serialize;

/// Which run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Side {
    /// The baseline (first argument).
    A,
    /// The candidate (second argument); ratios are B/A.
    B,
}

impl std::fmt::Display for Side {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Side::A => "A",
            Side::B => "B",
        })
    }
}

/// The parameters two points must share to be compared: concurrency, input
/// and output length, and for an open-loop point the shape of its load (rate
/// steps, arrival process, cap, trace), since every rate of a sweep shares
/// the same concurrency; its images per request and their swept size; in
/// runs with deployments, the deployment.
pub fn pair_key(p: &Point) -> (u32, u32, u32, Option<String>, Option<&str>) {
    let load = p.open_loop.as_ref().map(qexp_plan::OpenLoop::fingerprint);
    let load = match p.images {
        None => load,
        Some(i) => Some(format!(
            "{}|img={}{}",
            load.unwrap_or_default(),
            i.count,
            i.size.map_or_else(String::new, |s| format!("@{s}"))
        )),
    };
    (
        p.concurrency,
        p.input_tokens,
        p.output_tokens,
        load,
        p.deployment.as_deref(),
    )
}

/// Paired indices into `a` and `b` (in A's order) and the indices left over on each side.
pub fn pair(
    a: &[PointSummary],
    b: &[PointSummary],
) -> (Vec<(usize, usize)>, Vec<usize>, Vec<usize>) {
    let mut used = vec![false; b.len()];
    let mut pairs = Vec::new();
    let mut only_a = Vec::new();
    for (i, pa) in a.iter().enumerate() {
        let key = pair_key(&pa.point);
        // The first unused match, so a plan listing a value twice pairs in order.
        match (0..b.len()).find(|&j| !used[j] && pair_key(&b[j].point) == key) {
            Some(j) => {
                used[j] = true;
                pairs.push((i, j));
            }
            None => only_a.push(i),
        }
    }
    let only_b = (0..b.len()).filter(|&j| !used[j]).collect();
    (pairs, only_a, only_b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pt(id: u32, c: u32, input: u32, output: u32) -> PointSummary {
        let point = Point {
            id,
            concurrency: c,
            input_tokens: input,
            output_tokens: output,
            requests: 4,
            warmup: 1,
            open_loop: None,
            deployment: None,
            images: None,
        };
        PointSummary::new(point, Vec::new())
    }

    #[test]
    fn pairs_by_parameters_not_ids() {
        let a = [
            pt(0, 1, 1000, 500),
            pt(1, 4, 1000, 500),
            pt(2, 8, 1000, 500),
        ];
        // B ran the points in another order and has one more.
        let b = [
            pt(0, 8, 1000, 500),
            pt(1, 1, 1000, 500),
            pt(2, 16, 1000, 500),
        ];
        let (pairs, only_a, only_b) = pair(&a, &b);
        assert_eq!(pairs, [(0, 1), (2, 0)]);
        assert_eq!(only_a, [1]);
        assert_eq!(only_b, [2]);
    }

    #[test]
    fn output_length_is_part_of_the_key() {
        let (pairs, only_a, only_b) = pair(&[pt(0, 1, 1000, 500)], &[pt(0, 1, 1000, 200)]);
        assert!(pairs.is_empty());
        assert_eq!((only_a, only_b), (vec![0], vec![0]));
    }

    fn rate_point(id: u32, rate: f64) -> PointSummary {
        let mut p = pt(id, 8, 1000, 500);
        p.point.open_loop = Some(qexp_plan::OpenLoop {
            arrival: qexp_plan::Arrival::Poisson,
            burstiness: 1.0,
            max_in_flight: Some(8),
            stages: vec![qexp_plan::Stage { rate, requests: 40 }],
            trace: None,
        });
        p
    }

    #[test]
    fn open_loop_points_pair_by_rate_not_by_their_cap() {
        // Every rate of a sweep has the cap as its concurrency: rate 1 of A
        // must not meet rate 2 of B, nor a closed-loop point at c=8.
        let a = [rate_point(0, 1.0), rate_point(1, 2.0), rate_point(2, 4.0)];
        let b = [rate_point(0, 2.0), rate_point(1, 4.0), pt(2, 8, 1000, 500)];
        let (pairs, only_a, only_b) = pair(&a, &b);
        assert_eq!(pairs, [(1, 0), (2, 1)]);
        assert_eq!((only_a, only_b), (vec![0], vec![2]));
    }

    #[test]
    fn repeated_parameters_pair_in_order() {
        let a = [pt(0, 1, 10, 10), pt(1, 1, 10, 10)];
        let b = [pt(0, 1, 10, 10), pt(1, 1, 10, 10)];
        assert_eq!(pair(&a, &b).0, [(0, 0), (1, 1)]);
    }
}
