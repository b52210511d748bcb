//! A plan split over 4 `qexp run --shard K/4` processes against one
//! simulator (the `exact` profile: TTFT 50 ms, 10 ms per token), meeting at
//! shard 0's rendezvous, some with a deliberately skewed clock, then
//! `qexp merge`d: the merged run holds exactly the plan's requests, each
//! once; the closed loop keeps C in flight across the shards and the open
//! loop keeps the plan's rate; every percentile of the merged run is the
//! one computed directly over the union of the shards' rows; its medians
//! fall inside a one-process run's 95% interval; the skewed clocks are
//! corrected to within 1 ms. A shard killed mid-point is named by the
//! others and by `qexp merge`, and `--resume` of it completes the run. The
//! index lists a merged run once, its shard folders under it.
//! Every process a test starts is killed when it ends, pass or fail.

use crate::common::qexp;
use polars::prelude::*;
use qexp_testkit::{f64s, u32s};
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Output};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const CLOSED: &str = r#"
[experiment]
name = "shards-closed"
version = 1

[target]
base_url = "http://127.0.0.1:1"
api = "chat"
extra_body = { ignore_eos = true }

[workload]
input_tokens = 2000
output_tokens = 40

[workload.input_lengths]
distribution = "lognormal"
std_dev = 1500
min = 100
max = 6000

[workload.output_lengths]
distribution = "uniform"
min = 10
max = 80

[sweep]
concurrency = [8]

[run]
requests = 96
warmup_requests = 4
trials = 6
seed = 11
"#;

/// The plan of the failure test: two points, one request in flight per
/// shard at the first (about 3 s of it), so a kill lands mid-point.
const KILLED: &str = r#"
[experiment]
name = "shards-killed"
version = 1

[target]
base_url = "http://127.0.0.1:1"
api = "chat"
extra_body = { ignore_eos = true }

[workload]
input_tokens = 100
output_tokens = 20

[sweep]
concurrency = [4, 8]

[run]
requests = 48
warmup_requests = 4
trials = 1
seed = 13
"#;

const OPEN: &str = r#"
[experiment]
name = "shards-open"
version = 1

[target]
base_url = "http://127.0.0.1:1"
api = "chat"
extra_body = { ignore_eos = true }

[workload]
input_tokens = 100
output_tokens = 10

[sweep]
rate = [100]

[load]
arrival = "constant"
duration_s = 3.0
max_in_flight = 64

[run]
warmup_requests = 2
trials = 1
seed = 12
"#;

/// The plan of the index test: one small point, a second of load.
const SMALL: &str = r#"
[experiment]
name = "shards-index"
version = 1

[target]
base_url = "http://127.0.0.1:1"
api = "chat"
extra_body = { ignore_eos = true }

[workload]
input_tokens = 100
output_tokens = 10

[sweep]
concurrency = [4]

[run]
requests = 8
warmup_requests = 2
trials = 1
seed = 14
"#;

/// Skews given to shards 1..3 (s): their clocks read this far ahead.
const SKEWS: [f64; 4] = [0.0, 3.7, -2.1, 0.45];

/// Shard processes; every one still running is killed on drop.
struct Shards {
    children: Vec<Child>,
    stderr: Vec<Arc<Mutex<String>>>,
}

impl Drop for Shards {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Collects a child's stderr as it comes.
fn collect_stderr(child: &mut Child) -> Arc<Mutex<String>> {
    let buf = Arc::new(Mutex::new(String::new()));
    if let Some(err) = child.stderr.take() {
        let b = buf.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                let mut b = b.lock().unwrap();
                b.push_str(&line);
                b.push('\n');
            }
        });
    }
    buf
}

struct Setup {
    tmp: tempfile::TempDir,
    plan: PathBuf,
    results: PathBuf,
    target: String,
    _sim: qexp_sim::SimServer,
}

async fn setup(profile: &str, plan_text: &str) -> Setup {
    let sim = qexp_testkit::sim(profile).await;
    let tmp = tempfile::tempdir().unwrap();
    let plan = tmp.path().join("plan.toml");
    std::fs::write(&plan, plan_text).unwrap();
    let results = tmp.path().join("results");
    Setup {
        target: sim.base_url(),
        tmp,
        plan,
        results,
        _sim: sim,
    }
}

/// `qexp run --shard K/N …` for shard `k`, rendezvous at `addr`.
fn shard_args(s: &Setup, k: u32, n: u32, run_id: &str, addr: &str) -> Vec<String> {
    [
        "run",
        s.plan.to_str().unwrap(),
        "--target",
        &s.target,
        "--out",
        s.results.to_str().unwrap(),
        "--no-report",
        "--shard",
        &format!("{k}/{n}"),
        "--run-id",
        run_id,
        "--rendezvous",
        addr,
        "--shard-lost-after",
        "2",
        "--shard-join-timeout",
        "60",
        "--clock-skew-s",
        &SKEWS[k as usize % SKEWS.len()].to_string(),
    ]
    .iter()
    .map(|a| a.to_string())
    .collect()
}

/// Starts shard 0 on 127.0.0.1:0, reads where it serves, starts the others.
async fn start_shards(s: &Setup, n: u32, run_id: &str) -> Shards {
    let mut shards = Shards {
        children: Vec::new(),
        stderr: Vec::new(),
    };
    let args = shard_args(s, 0, n, run_id, "127.0.0.1:0");
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut zero = qexp(&argv).spawn().unwrap();
    shards.stderr.push(collect_stderr(&mut zero));
    shards.children.push(zero);
    let marker = format!("rendezvous for {n} shards on ");
    let started = Instant::now();
    let addr = loop {
        let text = shards.stderr[0].lock().unwrap().clone();
        if let Some(rest) = text.split(&marker).nth(1) {
            break rest.split_whitespace().next().unwrap().to_string();
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "shard 0 did not serve the rendezvous: {text}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    for k in 1..n {
        let args = shard_args(s, k, n, run_id, &addr);
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut c = qexp(&argv).spawn().unwrap();
        shards.stderr.push(collect_stderr(&mut c));
        shards.children.push(c);
    }
    shards
}

/// Waits (bounded) for shard `k` to exit; its exit status.
async fn exit_of(shards: &mut Shards, k: usize) -> std::process::ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(st) = shards.children[k].try_wait().unwrap() {
            return st;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "shard {k} did not exit: {}",
            shards.stderr[k].lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn all_succeed(shards: &mut Shards) {
    for k in 0..shards.children.len() {
        let st = exit_of(shards, k).await;
        assert!(
            st.success(),
            "shard {k} failed: {}",
            shards.stderr[k].lock().unwrap()
        );
    }
}

/// The shard folders of `run_id` under the results root, by shard index.
fn shard_dirs(s: &Setup, experiment: &str, run_id: &str, n: u32) -> Vec<PathBuf> {
    (0..n)
        .map(|k| {
            s.results
                .join(experiment)
                .join(format!("{run_id}-shard{k}-of-{n}"))
        })
        .collect()
}

fn merge(dirs: &[PathBuf], out: &Path, extra: &[&str]) -> Output {
    let mut args: Vec<&str> = vec!["merge"];
    args.extend(dirs.iter().map(|d| d.to_str().unwrap()));
    args.extend(["--out", out.to_str().unwrap()]);
    args.extend(extra);
    qexp(&args).output().unwrap()
}

/// `qexp report RUN --out-dir OUT …`.
fn report(run: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "report",
        run.to_str().unwrap(),
        "--out-dir",
        out.to_str().unwrap(),
    ];
    args.extend(extra);
    qexp(&args).output().unwrap()
}

fn text(o: &[u8]) -> String {
    String::from_utf8_lossy(o).into_owned()
}

/// The measured rows of a run, sorted by trial and send time.
fn measured(run: &Path) -> DataFrame {
    qexp_store::scan_requests(run)
        .unwrap()
        .filter(col("warmup").not())
        .sort(["trial", "sent_unix_s"], Default::default())
        .collect()
        .unwrap()
}

/// Every (trial, point, request index) of the run's rows, warmups too.
fn keys(run: &Path) -> Vec<(u32, u32, u32)> {
    let df = qexp_store::scan_requests(run).unwrap().collect().unwrap();
    let (t, p, i) = (
        u32s(&df, "trial"),
        u32s(&df, "point_id"),
        u32s(&df, "request_index"),
    );
    let mut k: Vec<_> = (0..df.height()).map(|r| (t[r], p[r], i[r])).collect();
    k.sort_unstable();
    k
}

/// numpy's linear-interpolation percentile.
fn percentile(values: &[f64], q: f64) -> f64 {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    let h = (v.len() - 1) as f64 * q;
    let (lo, hi) = (h.floor() as usize, h.ceil() as usize);
    v[lo] + (h - h.floor()) * (v[hi] - v[lo])
}

/// TTFT p50 and p90, E2E p50, pooled chunk-gap p50/p90/p99 of one trial,
/// computed over the rows of every folder in `dirs` together.
fn direct(dirs: &[PathBuf], trial: u32) -> [f64; 6] {
    let (mut ttft, mut e2e, mut gaps) = (Vec::new(), Vec::new(), Vec::new());
    for d in dirs {
        let df = qexp_store::scan_requests(d)
            .unwrap()
            .filter(
                col("warmup")
                    .not()
                    .and(col("trial").eq(lit(trial)))
                    .and(col("error_class").is_null()),
            )
            .collect()
            .unwrap();
        ttft.extend(f64s(&df, "ttft_s"));
        e2e.extend(f64s(&df, "e2e_s"));
        // One row at a time, each list as a Series of its own.
        let lists = df
            .column("chunk_offsets_s")
            .unwrap()
            .as_materialized_series()
            .clone();
        for r in 0..lists.len() {
            let AnyValue::List(offs) = lists.get(r).unwrap() else {
                panic!("chunk_offsets_s is a list column")
            };
            let o: Vec<f64> = offs.f64().unwrap().into_no_null_iter().collect();
            gaps.extend(o.windows(2).map(|w| w[1] - w[0]));
        }
    }
    [
        percentile(&ttft, 0.5),
        percentile(&ttft, 0.9),
        percentile(&e2e, 0.5),
        percentile(&gaps, 0.5),
        percentile(&gaps, 0.9),
        percentile(&gaps, 0.99),
    ]
}

/// Time-weighted mean and the most requests in flight over `[from, to]`.
fn in_flight(df: &DataFrame, trial: u32, from: f64, to: f64) -> (f64, usize) {
    let t = u32s(df, "trial");
    let sent = f64s(df, "sent_unix_s");
    let end = f64s(df, "end_s");
    let spans: Vec<(f64, f64)> = (0..df.height())
        .filter(|&r| t[r] == trial)
        .map(|r| (sent[r], sent[r] + end[r]))
        .collect();
    let steps = 2000;
    let (mut sum, mut most) = (0usize, 0usize);
    for i in 0..steps {
        let at = from + (to - from) * (i as f64 + 0.5) / steps as f64;
        let n = spans.iter().filter(|(a, b)| *a <= at && at < *b).count();
        sum += n;
        most = most.max(n);
    }
    (sum as f64 / steps as f64, most)
}

/// Each shard's recorded clock offset against the skew it was given: the
/// largest error, s.
fn clock_error(dirs: &[PathBuf]) -> f64 {
    let mut worst: f64 = 0.0;
    for (k, d) in dirs.iter().enumerate() {
        let m = qexp_store::read_manifest(d).unwrap();
        let s = m.shard.expect("a shard record");
        assert_eq!(s.index as usize, k);
        // Shard 0 is the reference; shard k's clock reads skew[k] − skew[0] ahead.
        let err = s.clock_offset_s + (SKEWS[k] - SKEWS[0]);
        eprintln!(
            "shard {k}: skew {:+.3} s, offset measured {:+.6} s, error {:+.6} s (rtt {:.6} s)",
            SKEWS[k],
            s.clock_offset_s,
            err,
            s.clock_rtt_s.unwrap_or(f64::NAN)
        );
        worst = worst.max(err.abs());
    }
    worst
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_loop_shards_merge_into_the_plans_run() {
    let _heavy = crate::common::heavy().await;
    // The `fast` profile (the founding deployment at 20× speed): TTFT grows
    // with the prompt, so the drawn lengths spread the requests' times.
    let s = setup("fast", CLOSED).await;
    let run_id = "20261203T120000Z-c10500";
    let mut shards = start_shards(&s, 4, run_id).await;
    all_succeed(&mut shards).await;
    let dirs = shard_dirs(&s, "shards-closed", run_id, 4);
    let worst = clock_error(&dirs);
    eprintln!("clock offsets corrected to within {:.3} ms", worst * 1e3);
    assert!(worst < 0.001, "clock offsets off by up to {worst} s");

    let out = s.results.join("shards-closed").join(run_id);
    let o = merge(&dirs, &out, &[]);
    assert!(o.status.success(), "merge: {}", text(&o.stderr));
    assert!(
        text(&o.stdout).contains("merged 4 of 4 shards"),
        "{}",
        text(&o.stdout)
    );

    // Exactly the plan's requests, each once, warmups included.
    let planned: Vec<(u32, u32, u32)> = (1..=6)
        .flat_map(|t| (0..100).map(move |i| (t, 0, i)))
        .collect();
    assert_eq!(keys(&out), planned);
    let df = measured(&out);
    let shard_col: BTreeSet<u32> = u32s(&df, "shard").into_iter().collect();
    assert_eq!(shard_col, (0..4).collect());
    // Each (trial, point) in one block of the merged file, its rows shard
    // by shard: the report's pass then reads one (trial, point) at a time.
    let stored = qexp_store::scan_requests(&out).unwrap().collect().unwrap();
    let (t, p, k) = (
        u32s(&stored, "trial"),
        u32s(&stored, "point_id"),
        u32s(&stored, "shard"),
    );
    let mut blocks: Vec<(u32, u32)> = Vec::new();
    for r in 0..stored.height() {
        if blocks.last() != Some(&(t[r], p[r])) {
            blocks.push((t[r], p[r]));
        } else {
            assert!(
                k[r] >= k[r - 1],
                "row {r}: shard {} after {}",
                k[r],
                k[r - 1]
            );
        }
    }
    assert_eq!(blocks, (1..=6).map(|t| (t, 0)).collect::<Vec<_>>());

    // C = 8 in flight across the shards while every shard sends.
    let pts = qexp_store::scan_points(&out).unwrap().collect().unwrap();
    let (ws, we) = (
        f64s(&pts, "window_start_unix_s"),
        f64s(&pts, "window_end_unix_s"),
    );
    for trial in 1..=6u32 {
        let i = trial as usize - 1;
        let pad = (we[i] - ws[i]) * 0.1;
        let (mean, most) = in_flight(&df, trial, ws[i] + pad, we[i] - pad);
        eprintln!("trial {trial}: in flight mean {mean:.2}, most {most} (C = 8)");
        assert!(most <= 8, "more than C in flight: {most}");
        assert!(mean > 7.2, "fewer than C in flight on average: {mean}");
    }

    // Read a few rows at a time instead of a row group (each (trial,
    // point) cut into many pieces), the merge writes the same run.
    let pieces = s.tmp.path().join("merged-in-pieces");
    qexp_merge::merge(&qexp_merge::MergeOptions {
        shards: dirs.clone(),
        out: pieces.clone(),
        partial: false,
        piece_rows: 7,
    })
    .expect("merged in pieces");
    let all = |run: &Path| {
        let r = qexp_store::scan_requests(run).unwrap().collect().unwrap();
        let p = qexp_store::scan_points(run).unwrap().collect().unwrap();
        (r, p)
    };
    assert_eq!(all(&pieces), all(&out));

    // Every percentile of the merged run is the union's, computed directly.
    let a = qexp_analysis::analyze(&out).unwrap();
    assert_eq!(a.points.len(), 1);
    for tm in &a.points[0].trials {
        let got = [
            tm.ttft_s,
            tm.ttft_p90_s,
            tm.e2e_s,
            tm.itl_p50_s,
            tm.itl_p90_s,
            tm.itl_p99_s,
        ];
        let want = direct(&dirs, tm.trial);
        for (g, w) in got.iter().zip(want) {
            assert!(
                (g - w).abs() <= 1e-12 * w.abs().max(1.0),
                "trial {}: {got:?} vs {want:?}",
                tm.trial
            );
        }
        assert_eq!(tm.requests, 96);
    }

    // One process, the same plan: the merged medians fall in its 95% intervals.
    let single = qexp(&[
        "run",
        s.plan.to_str().unwrap(),
        "--target",
        &s.target,
        "--out",
        s.tmp.path().join("single").to_str().unwrap(),
        "--no-report",
    ])
    .output()
    .unwrap();
    assert!(single.status.success(), "{}", text(&single.stderr));
    let single_dir = qexp_store::find_runs(&s.tmp.path().join("single"))
        .pop()
        .unwrap()
        .dir;
    // Trials, then requests (DESIGN.md): the interval is the order-statistic
    // 95% CI of the median over the one-process run's 6 trial medians.
    let one = qexp_analysis::analyze(&single_dir).unwrap();
    for (name, an) in [("one process", &one), ("4 shards merged", &a)] {
        let p = &an.points[0];
        let med = |s: &Option<qexp_analysis::stats::summary::Summary>| {
            s.as_ref().map_or(f64::NAN, |s| s.median)
        };
        eprintln!(
            "{name}: TTFT median {:.4} s, TTFT p90 {:.4} s, E2E median {:.4} s, ITL p50 {:.4} s, aggregate {:.0} tok/s ({} requests)",
            med(&p.ttft_s), med(&p.ttft_p90_s), med(&p.e2e_s), med(&p.itl_p50_s), med(&p.agg_tok_s), p.requests
        );
    }
    for (metric, merged, single) in [
        ("ttft_s", &a.points[0].ttft_s, &one.points[0].ttft_s),
        ("e2e_s", &a.points[0].e2e_s, &one.points[0].e2e_s),
    ] {
        let merged = merged.as_ref().unwrap().median;
        let single = single.as_ref().unwrap();
        let ci = single.ci95.unwrap();
        eprintln!(
            "{metric}: merged median {merged:.6} s, one process median {:.6} s, 95% CI [{:.6}, {:.6}] s",
            single.median, ci.0, ci.1
        );
        assert!(
            ci.0 <= merged && merged <= ci.1,
            "{metric}: {merged} outside {ci:?}"
        );
    }

    // An ordinary run: report and diff read it, --resume finds it complete.
    let reports = s.tmp.path().join("reports");
    let o = report(&out, &reports, &[]);
    assert!(o.status.success(), "report: {}", text(&o.stderr));
    let o = qexp(&[
        "diff",
        single_dir.to_str().unwrap(),
        out.to_str().unwrap(),
        "--out",
        reports.join("diff").to_str().unwrap(),
    ])
    .output()
    .unwrap();
    assert!(o.status.success(), "diff: {}", text(&o.stderr));
    let o = qexp(&["run", "--resume", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("nothing to resume"),
        "{}",
        text(&o.stderr)
    );
}

/// The index of a sharded run shows one run: the merged run, whose row
/// names its shards; the shard folders are no rows of their own and feed
/// no history (one complete run: a row, no chart), and the newest run
/// `qexp report` picks is the merged one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_index_of_a_sharded_run_shows_one_run() {
    let _heavy = crate::common::shared().await;
    let s = setup("exact", SMALL).await;
    let run_id = "20261203T120000Z-1d0e00";
    let mut shards = start_shards(&s, 2, run_id).await;
    all_succeed(&mut shards).await;
    let dirs = shard_dirs(&s, "shards-index", run_id, 2);
    let o = merge(&dirs, &s.results.join("shards-index").join(run_id), &[]);
    assert!(o.status.success(), "merge: {}", text(&o.stderr));
    let reports = s.tmp.path().join("reports");
    let results = s.results.to_str().unwrap();
    let o = qexp(&[
        "report",
        "--results",
        results,
        "--out-dir",
        reports.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    assert!(o.status.success(), "report: {}", text(&o.stderr));
    let stdout = text(&o.stdout);
    let merged_report = reports.join("shards-index").join(run_id).join("report.md");
    assert!(
        stdout.contains(&format!("report: {}", merged_report.display())),
        "{stdout}"
    );
    let md = std::fs::read_to_string(reports.join("index.md")).unwrap();
    let rows: Vec<&str> = md.lines().filter(|l| l.contains(" UTC | ")).collect();
    assert_eq!(rows.len(), 1, "{md}");
    assert!(
        rows[0].contains(&format!("[`{run_id}`]")) && rows[0].contains("merged from 2 of 2 shards"),
        "{md}"
    );
    assert!(md.contains("One complete run of workload"), "{md}");
    assert!(!md.contains(".svg"), "no history chart of one run: {md}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_loop_shards_keep_the_plans_rate() {
    let _heavy = crate::common::heavy().await;
    let s = setup("exact", OPEN).await;
    let run_id = "20261203T120000Z-0be000";
    let mut shards = start_shards(&s, 4, run_id).await;
    all_succeed(&mut shards).await;
    let dirs = shard_dirs(&s, "shards-open", run_id, 4);
    assert!(clock_error(&dirs) < 0.001);
    let out = s.tmp.path().join("merged");
    let o = merge(&dirs, &out, &[]);
    assert!(o.status.success(), "merge: {}", text(&o.stderr));
    // 100/s × 3 s = 300 measured requests, 2 warmups.
    let planned: Vec<(u32, u32, u32)> = (0..302).map(|i| (1, 0, i)).collect();
    assert_eq!(keys(&out), planned);
    let df = measured(&out);
    let sent = f64s(&df, "sent_unix_s");
    let (first, last) = (sent[0], sent[sent.len() - 1]);
    let rate = (sent.len() - 1) as f64 / (last - first);
    eprintln!(
        "open loop: {} requests sent at {rate:.2}/s (plan 100/s)",
        sent.len()
    );
    assert!((rate / 100.0 - 1.0).abs() < 0.02, "achieved {rate}/s");
    // The schedule itself: the union's due times are the one-process plan's
    // (constant arrivals every 10 ms), to well within a millisecond per
    // shard: each counts from the start shard 0 named, not from when it
    // woke (late by milliseconds on a busy host).
    let mut due = f64s(&df, "scheduled_unix_s");
    due.sort_by(f64::total_cmp);
    let worst = due
        .iter()
        .enumerate()
        .map(|(i, d)| (d - due[0] - i as f64 * 0.01).abs())
        .fold(0.0, f64::max);
    eprintln!(
        "open loop: due times at most {:.3} ms off the plan",
        1e3 * worst
    );
    for (i, d) in due.iter().enumerate() {
        let want = due[0] + i as f64 * 0.01;
        assert!(
            (d - want).abs() < 0.002,
            "arrival {i} due at {d}, plan {want}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_shard_is_named_and_resume_then_merge_completes_the_run() {
    let _heavy = crate::common::shared().await;
    kill_resume_merge(3, "20261203T120000Z-d1ed03").await;
}

/// Shard 0 serves the rendezvous: when it dies the others go on alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_shard_0_is_named_and_the_others_go_on_alone() {
    let _heavy = crate::common::shared().await;
    kill_resume_merge(0, "20261203T120000Z-d1ed00").await;
}

/// Kills shard `victim` mid-point: the others finish and name it, `qexp
/// merge` refuses naming it (and `--partial` merges the rest), `--resume`
/// of it alone, then the merge, completes the run, saying which shards
/// were out of step.
async fn kill_resume_merge(victim: usize, run_id: &str) {
    let s = setup("exact", KILLED).await;
    let mut shards = start_shards(&s, 4, run_id).await;
    let dirs = shard_dirs(&s, "shards-killed", run_id, 4);
    // Kill it once it has journaled a few requests of its first point.
    let journal = dirs[victim].join("journal");
    let started = Instant::now();
    loop {
        let lines: usize = std::fs::read_dir(&journal)
            .map(|d| {
                d.filter_map(Result::ok)
                    .filter_map(|e| std::fs::read_to_string(e.path()).ok())
                    .map(|t| t.lines().count())
                    .sum()
            })
            .unwrap_or(0);
        if lines >= 3 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "shard {victim} never sent"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    shards.children[victim].kill().unwrap();
    shards.children[victim].wait().unwrap();
    for (k, dir) in dirs.iter().enumerate().filter(|(k, _)| *k != victim) {
        let st = exit_of(&mut shards, k).await;
        assert!(
            st.success(),
            "shard {k}: {}",
            shards.stderr[k].lock().unwrap()
        );
        let m = qexp_store::read_manifest(dir).unwrap();
        let lost = m.shard.unwrap().lost;
        assert_eq!(
            lost.iter().map(|l| l.shard).collect::<Vec<_>>(),
            [victim as u32],
            "shard {k}"
        );
        assert!(
            lost[0].message.contains(&format!("shard {victim} ")),
            "{}",
            lost[0].message
        );
    }
    let out = s.tmp.path().join("merged");
    let o = merge(&dirs, &out, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stdout));
    let err = text(&o.stderr);
    assert!(
        err.contains(&format!("shard {victim} of 4")) && err.contains("--resume"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(!out.exists(), "a refused merge writes nothing");
    // --partial merges what there is and says what is missing.
    let partial = s.tmp.path().join("partial");
    let o = merge(&dirs, &partial, &["--partial"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        text(&o.stdout).contains(&format!("partial: shard {victim} of 4")),
        "{}",
        text(&o.stdout)
    );
    let m = qexp_store::read_manifest(&partial).unwrap();
    let rec = m.merged.unwrap();
    assert!(rec.partial);
    assert_eq!(rec.missing, [victim as u32]);
    let df = measured(&partial);
    assert!(u32s(&df, "shard").iter().all(|k| *k != victim as u32));
    // Its report says so at the top (its status is complete).
    let reports = s.tmp.path().join("reports");
    let o = report(&partial, &reports, &["--no-index"]);
    assert!(o.status.success(), "report: {}", text(&o.stderr));
    let md = std::fs::read_to_string(
        reports
            .join("shards-killed")
            .join(&m.run_id)
            .join("report.md"),
    )
    .unwrap();
    assert!(
        md.contains(&format!(
            "merged from 3 of 4 shards (--partial): the requests of shard {victim} are missing"
        )),
        "{}",
        &md[..md.len().min(1500)]
    );

    let o = qexp(&[
        "run",
        "--resume",
        dirs[victim].to_str().unwrap(),
        "--no-report",
    ])
    .output()
    .unwrap();
    assert!(o.status.success(), "resume: {}", text(&o.stderr));
    let o = merge(&dirs, &out, &[]);
    assert!(
        o.status.success(),
        "merge after resume: {}",
        text(&o.stderr)
    );
    let planned: Vec<(u32, u32, u32)> = (0..2)
        .flat_map(|p| (0..52).map(move |i| (1, p, i)))
        .collect();
    assert_eq!(keys(&out), planned);
    // The merge says, and records, which shards were out of step: the
    // victim (resumed alone); when it was shard 0, the others too, which
    // went on alone without its barriers.
    let err = text(&o.stderr);
    assert!(
        err.contains(&format!("warning: shard {victim} of 4 did not run in step")),
        "{err}"
    );
    let rec = qexp_store::read_manifest(&out).unwrap().merged.unwrap();
    let apart: Vec<u32> = rec.out_of_step.iter().map(|l| l.shard).collect();
    let expected: Vec<u32> = match victim {
        0 => vec![0, 1, 2, 3],
        v => vec![v as u32],
    };
    assert_eq!(apart, expected, "{:?}", rec.out_of_step);
}

/// Shards of one run id and plan that asked another server or model, or
/// ran another number of trials, are not one run: the merge refuses them,
/// naming what differs, and writes nothing.
#[test]
fn shards_that_measured_something_else_are_not_merged() {
    let tmp = tempfile::tempdir().unwrap();
    let shard = |k: u32| {
        qexp_testkit::ManifestFixture::new("m", &[], 2)
            .with("status", "complete")
            .with(
                "shard",
                serde_json::json!({"index": k, "count": 2, "clock_offset_s": 0.0}),
            )
    };
    for (what, path, value) in [
        (
            "target",
            "target.base_url",
            serde_json::json!("http://10.0.0.9:8000"),
        ),
        ("model", "target.model", serde_json::json!("other-model")),
        ("trial count", "trials", serde_json::json!(3)),
        (
            "workload hash",
            "comparability.workload_hash",
            serde_json::json!("ff"),
        ),
    ] {
        let dirs: Vec<PathBuf> = (0..2u32)
            .map(|k| {
                let m = if k == 1 {
                    shard(k).with(path, value.clone())
                } else {
                    shard(k)
                };
                let dir = tmp.path().join(format!("{what}-{k}"));
                std::fs::create_dir_all(&dir).unwrap();
                let json = serde_json::to_string(&m.build()).unwrap();
                std::fs::write(dir.join("manifest.json"), json).unwrap();
                dir
            })
            .collect();
        let out = tmp.path().join(format!("{what}-merged"));
        let o = merge(&dirs, &out, &[]);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{what}: {err}");
        assert!(
            err.contains(&format!("are not shards of one run: their {what} differs")),
            "{what}: {err}"
        );
        assert!(!out.exists(), "{what}: the merge wrote {}", out.display());
    }
}

/// A shard resumed on another host than the one it ran on would write its
/// times on the clock offset measured there: the resume says so and waits
/// for --force, before it asks any server anything.
#[test]
fn a_shard_resumed_on_another_host_is_refused_unless_forced() {
    let tmp = tempfile::tempdir().unwrap();
    let plan_path = tmp.path().join("shards-closed.toml");
    std::fs::write(&plan_path, CLOSED).unwrap();
    let plan = qexp_plan::Plan::load(&plan_path).unwrap();
    let dir = tmp.path().join("shards-closed/R-shard1-of-2");
    std::fs::create_dir_all(&dir).unwrap();
    let m = qexp_testkit::ManifestFixture::new("shards-closed", &plan.points(), plan.trials())
        .with("plan_path", plan_path.to_str().unwrap())
        .with("plan_text", CLOSED)
        .with("plan_hash", plan.hash())
        .with("status", "interrupted")
        .with("host.hostname", "a-host-that-is-not-this-one")
        .with(
            "shard",
            serde_json::json!({"index": 1, "count": 2, "clock_offset_s": 0.0123}),
        )
        .build();
    std::fs::write(
        dir.join("manifest.json"),
        serde_json::to_string(&m).unwrap(),
    )
    .unwrap();
    let o = qexp(&["run", "--resume", dir.to_str().unwrap()])
        .output()
        .unwrap();
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("shard 1 of 2 measured its clock offset to shard 0 (+0.012300 s) on host a-host-that-is-not-this-one")
            && err.contains("pass --force"),
        "{err}"
    );
}

/// A `sim:` target is a simulator inside each process: shards against it
/// would each measure their own and share no load, so `qexp run --shard`
/// refuses it in one sentence (exit 2) before writing anything, saying how
/// to serve one simulator to all of them.
#[test]
fn shards_against_an_in_process_simulator_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = tmp.path().join("plan.toml");
    std::fs::write(&plan, CLOSED).unwrap();
    let results = tmp.path().join("results");
    let o = qexp(&[
        "run",
        plan.to_str().unwrap(),
        "--target",
        "sim:fast",
        "--out",
        results.to_str().unwrap(),
        "--no-report",
        "--shard",
        "1/2",
        "--run-id",
        "in-process",
    ])
    .output()
    .unwrap();
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("error: target `sim:fast` is a simulator inside each qexp process")
            && err.contains("`qexp sim --profile fast")
            && err.contains("--target http://"),
        "{err}"
    );
    assert!(
        !results.exists(),
        "a refused shard wrote {}",
        results.display()
    );
}
