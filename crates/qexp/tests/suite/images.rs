//! Images in the prompt end to end: an image file that is missing or is
//! not an image stops the plan before anything is sent; a server that takes
//! fewer images per prompt than the plan (or a dataset entry) sends is
//! refused before any load;
//! against the simulator, images raise TTFT by the profile's cost per image
//! token, `usage.prompt_tokens` counts their patches, each row records its
//! images, and the report charts TTFT against image pixels; `qexp fit`
//! learns the cost per image token from a run that varies images and text.

use crate::common::{qexp, run_plan};
use qexp_plan::ApiKind;
use qexp_testkit::PlanFixture;
use std::path::Path;

fn images_plan(name: &str, target: &str) -> PlanFixture {
    PlanFixture::new(name)
        .target(target)
        .api(ApiKind::Chat)
        .input(40)
        .output(4)
        .concurrency(&[1])
        .warmup(0)
        .trials(1)
        .seed(3)
}

/// Runs `plan` from `dir` with `qexp run`: (exit code, non-empty stderr lines).
fn refused(dir: &Path, plan: &PlanFixture) -> (Option<i32>, Vec<String>) {
    let path = plan.write(dir);
    let out = qexp(&["run", path.to_str().unwrap()]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines = stderr
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect();
    (out.status.code(), lines)
}

#[test]
fn an_image_file_that_is_missing_or_not_an_image_stops_the_plan_before_anything_is_sent() {
    let tmp = tempfile::tempdir().unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::fs::write(
        tmp.path().join("notes.png"),
        "a text file named like an image",
    )
    .unwrap();
    for (file, says) in [
        ("missing.png", "cannot read image"),
        ("notes.png", "is not a PNG, JPEG, WebP or GIF image"),
    ] {
        let plan = images_plan("bad-images", &url).set("workload.images.files", vec![file]);
        let (code, lines) = refused(tmp.path(), &plan);
        assert_eq!(code, Some(2), "{lines:?}");
        assert_eq!(lines.len(), 1, "one sentence: {lines:?}");
        let line = plan
            .toml()
            .lines()
            .position(|l| l.starts_with("files = "))
            .unwrap()
            + 1;
        assert!(
            lines[0].contains(&format!(
                "bad-images.toml:{line}:10: `workload.images.files`: "
            )) && lines[0].contains(file)
                && lines[0].contains(says),
            "{lines:?}"
        );
    }
    assert!(
        matches!(listener.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "nothing may reach the server"
    );
    assert!(!tmp.path().join("results").exists(), "no run folder");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dataset_image_that_is_missing_or_not_an_image_stops_the_run_before_any_request() {
    let tmp = tempfile::tempdir().unwrap();
    // The simulator behind a proxy that counts the streams it answers: none may begin.
    let sim = qexp_testkit::sim("exact").await;
    let proxy = crate::counting_proxy::CountingProxy::start(sim.addr()).await;
    std::fs::write(tmp.path().join("notes.png"), "not an image").unwrap();
    let good = qexp_types::image::generate(1, 8, 8).unwrap().url;
    let web = r#"{"type": "image_url", "image_url": {"url": "http://example.com/a.png"}}"#;
    for (entry, says) in [
        (
            r#"{"prompt": "Describe it.", "images": ["gone.png"]}"#.to_string(),
            "cannot read image",
        ),
        (
            r#"{"prompt": "Describe it.", "images": ["notes.png"]}"#.to_string(),
            "is not a PNG, JPEG, WebP or GIF image",
        ),
        (
            format!(
                r#"{{"messages": [{{"role": "user", "content": [{{"type": "text", "text": "Describe it."}}, {web}]}}]}}"#
            ),
            "qexp fetches nothing",
        ),
    ] {
        let first = format!(r#"{{"prompt": "Describe it.", "images": ["{good}"]}}"#);
        std::fs::write(
            tmp.path().join("vision.jsonl"),
            format!("{first}\n{entry}\n"),
        )
        .unwrap();
        let plan = images_plan("bad-dataset", &proxy.base_url)
            .set("workload.dataset.path", "vision.jsonl");
        let dir = tmp.path().to_path_buf();
        let (code, lines) = tokio::task::spawn_blocking(move || refused(&dir, &plan))
            .await
            .unwrap();
        assert_eq!(code, Some(2), "{lines:?}");
        let last = lines.last().unwrap();
        assert!(
            last.contains("vision.jsonl:2: ") && last.contains(says),
            "{lines:?}"
        );
    }
    assert_eq!(proxy.started(), 0, "no request may be answered");
}

#[test]
fn a_server_that_takes_fewer_images_than_the_plan_sends_is_refused_before_any_load() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = images_plan("too-many", "sim:exact?max_images=1")
        .set("workload.images.size", "28x28")
        .set("sweep.image_count", vec![1_i64, 3]);
    let (code, lines) = refused(tmp.path(), &plan);
    assert_eq!(code, Some(2), "{lines:?}");
    let last = lines.last().unwrap();
    assert!(
        last.contains("sends 3 images per request but")
            && last.contains("takes at most 1 (/v1/models data[].limit_mm_per_prompt.image)"),
        "{lines:?}"
    );
}

#[test]
fn a_dataset_entry_with_more_images_than_the_server_takes_is_refused_before_any_load() {
    let tmp = tempfile::tempdir().unwrap();
    let image = qexp_types::image::generate(1, 8, 8).unwrap().url;
    let entry = |n: usize| {
        let urls = vec![format!("\"{image}\""); n].join(", ");
        format!(r#"{{"prompt": "Describe them.", "images": [{urls}]}}"#)
    };
    std::fs::write(
        tmp.path().join("vision.jsonl"),
        format!("{}\n{}\n{}\n", entry(1), entry(0), entry(2)),
    )
    .unwrap();
    let plan = images_plan("dataset-too-many", "sim:exact?max_images=1")
        .set("workload.dataset.path", "vision.jsonl");
    let (code, lines) = refused(tmp.path(), &plan);
    assert_eq!(code, Some(2), "{lines:?}");
    let last = lines.last().unwrap();
    assert!(
        last.contains("vision.jsonl entry 3 carries 2 images but")
            && last.contains("takes at most 1 (/v1/models data[].limit_mm_per_prompt.image)"),
        "{lines:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn images_raise_ttft_by_the_profiles_cost_per_image_token() {
    let _serial = crate::common::heavy().await;
    let tmp = tempfile::tempdir().unwrap();
    // `exact`: 50 ms before the first token, free text prefill, 28-pixel
    // patches at 0.2 ms each. Four 448 × 448 images are 4 × 16 × 16 = 1024
    // image tokens: 204.8 ms more before the first token.
    let profile = qexp_sim::SimProfile::by_name("exact").unwrap();
    let tokens = 4 * qexp_types::image::patches(448, 448, profile.image_patch_px);
    let expected_s = profile.image_token_s * tokens as f64;
    let plan = images_plan("images", "sim:exact")
        .set("workload.images.size", "448x448")
        .set("sweep.image_count", vec![0_i64, 4])
        .requests(6);
    let run = run_plan(tmp.path(), &plan).await;
    let ttft = |i: usize| run.points[i].ttft_s.as_ref().unwrap().median;
    let raised = ttft(1) - ttft(0);
    eprintln!("TTFT {:.4} s without images, {:.4} s with four: +{raised:.4} s (profile: +{expected_s:.4} s)", ttft(0), ttft(1));
    assert!(
        (raised / expected_s - 1.0).abs() < 0.05,
        "raised {raised} s, expected {expected_s} s"
    );
    let prompt = |i: usize| run.points[i].prompt_tokens.as_ref().unwrap().median;
    assert_eq!(
        prompt(1) - prompt(0),
        tokens as f64,
        "usage counts the image tokens"
    );
    // Each row records what it sent.
    let df = qexp_store::scan_requests(&run.dir)
        .unwrap()
        .collect()
        .unwrap();
    let images = qexp_testkit::u32s(&df, "images");
    let pixels = qexp_testkit::f64s(&df, "image_pixels");
    let bytes = qexp_testkit::f64s(&df, "image_bytes");
    let points = qexp_testkit::u32s(&df, "point_id");
    for (i, p) in points.iter().enumerate() {
        let n = if run.points[0].point.id == *p { 0 } else { 4 };
        assert_eq!(images[i], n);
        assert_eq!(pixels[i], f64::from(n * 448 * 448));
        assert_eq!(bytes[i] > 0.0, n > 0, "{bytes:?}");
    }
    // The report charts TTFT against the images' pixels.
    let templates = qexp_report::Templates::builtin().unwrap();
    let written = qexp_report::render_run(&run, &templates, &tmp.path().join("report")).unwrap();
    let md = std::fs::read_to_string(&written[0]).unwrap();
    assert!(md.contains("ttft_vs_image_pixels"), "{md}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn qexp_fit_learns_the_cost_per_image_token_where_a_run_varies_it() {
    let _serial = crate::common::heavy().await;
    let tmp = tempfile::tempdir().unwrap();
    // `exact` at two text lengths, with none or two 448 × 448 images (512
    // image tokens): the fit must tell the image tokens' own 0.2 ms apart
    // from what every prompt token costs.
    let plan = images_plan("image-fit", "sim:exact")
        .set("workload.images.size", "448x448")
        .set("sweep.input_tokens", vec![64_i64, 1024])
        .set("sweep.image_count", vec![0_i64, 2])
        .requests(4)
        .trials(3);
    let run = run_plan(tmp.path(), &plan).await;
    let obs = qexp_analysis::run_observations(&run, 0, None);
    let tokens: Vec<f64> = obs.rows.iter().map(|o| o.image_tokens).collect();
    assert!(
        tokens.iter().all(|t| *t == 0.0 || *t == 512.0),
        "{tokens:?}"
    );
    let model = qexp_model::fit(&obs.rows, &qexp_model::FitOptions::default()).unwrap();
    let want = qexp_sim::SimProfile::by_name("exact")
        .unwrap()
        .image_token_s;
    let got = model.params.prefill_s_per_image_token;
    let i = model.interval(qexp_model::Coef::PrefillPerImageToken);
    eprintln!("cost per image token: fitted {got:.3e} s, profile {want:.3e} s, 90% {i:?}");
    assert!(!model
        .unknown
        .contains(&qexp_model::Coef::PrefillPerImageToken));
    assert!((got / want - 1.0).abs() < 0.05, "{got} vs {want}");
    // `qexp predict --image-tokens` charges them: at one user, TTFT with
    // 512 image tokens is above TTFT without by what the fit charges them,
    // as prompt tokens and as image tokens.
    let file = tmp.path().join("image-model.json");
    model.write(&file).unwrap();
    let ttft = |extra: &[&str]| -> f64 {
        let mut args = vec!["predict", file.to_str().unwrap(), "--concurrency", "1"];
        args.extend(["--input", "64", "--output", "4"]);
        args.extend(extra);
        let out = qexp(&args).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let row = text.lines().find(|l| l.starts_with("c=1 in=64")).unwrap();
        assert_eq!(row.contains("img_tok=512"), !extra.is_empty(), "{row}");
        let cells: Vec<&str> = row.split_whitespace().collect();
        // The first metric is TTFT: "61.2 ms [lo … hi]" (or "1.23 s").
        let at = cells.iter().position(|c| c.starts_with("out=")).unwrap();
        let value: f64 = cells[at + 1].parse().unwrap();
        match cells[at + 2] {
            "ms" => value / 1e3,
            _ => value,
        }
    };
    let (bare, with) = (ttft(&[]), ttft(&["--image-tokens", "512"]));
    eprintln!("predicted TTFT at c=1 in=64 out=4: {bare} s bare, {with} s with 512 image tokens");
    let p = &model.params;
    let charged = p.prefill_compute_s(576.0) - p.prefill_compute_s(64.0) + p.image_compute_s(512.0);
    assert!(
        ((with - bare) / charged - 1.0).abs() < 0.05,
        "{bare} → {with}, {charged}"
    );
    // One text length: the term is unknown, and the fit says what to run.
    let one = qexp_analysis::run_observations(&run, 0, None)
        .rows
        .into_iter()
        .filter(|o| o.input_tokens - o.image_tokens < 500.0)
        .collect::<Vec<_>>();
    let model = qexp_model::fit(&one, &qexp_model::FitOptions::default()).unwrap();
    assert!(
        model
            .warnings
            .iter()
            .any(|w| matches!(w, qexp_model::FitWarning::ImagesNotSeparated { .. })),
        "{:?}",
        model.warnings
    );
    // Such a model cannot price image tokens, and `qexp predict` says so.
    assert_eq!(model.params.prefill_s_per_image_token, 0.0);
    let file = tmp.path().join("no-image-term.json");
    model.write(&file).unwrap();
    let out = qexp(&[
        "predict",
        file.to_str().unwrap(),
        "--concurrency",
        "1",
        "--input",
        "64",
        "--output",
        "4",
        "--image-tokens",
        "256",
    ])
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("has no cost per image token"), "{stderr}");
}
