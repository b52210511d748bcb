//! `qexp bench`: qexp's own cost (CPU, memory, timing error) against its bench
//! server, run in a process of its own.

use crate::{BenchArgs, CliError};
use anyhow::Context;
use qexp_bench::{run_bench, BenchServer, Scale};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// What the bench server prints first, before its URL.
const SERVING: &str = "qexp bench: serving on ";

/// `qexp bench`: starts the bench server in a process of its own (so qexp's
/// CPU and memory are measured alone), runs the scenarios, writes the results.
pub(crate) async fn bench(args: BenchArgs) -> Result<u8, CliError> {
    if args.serve {
        let server = BenchServer::start(args.port)
            .await
            .map_err(CliError::failure)?;
        println!("{SERVING}{}", server.base_url());
        let _ = tokio::signal::ctrl_c().await;
        return Ok(0);
    }
    let mut child = None;
    let url = match &args.server {
        Some(u) => u.clone(),
        None => {
            let (c, url) = spawn_server().map_err(CliError::failure)?;
            child = Some(c);
            url
        }
    };
    let scale = if args.quick {
        Scale::quick()
    } else if args.fidelity {
        Scale::fidelity_only()
    } else {
        Scale::full()
    };
    let scratch = tempfile_dir().map_err(CliError::failure)?;
    let result = run_bench(&url, &scale, args.quick, &scratch, |line| {
        eprintln!("qexp bench: {line}")
    })
    .await;
    let _ = std::fs::remove_dir_all(&scratch);
    if let Some(mut c) = child {
        let _ = c.kill();
        let _ = c.wait();
    }
    let res = result.map_err(CliError::failure)?;
    let out = args.out.unwrap_or_else(|| {
        std::path::PathBuf::from(format!(
            "results/bench/bench-{}.json",
            chrono::Utc::now().format("%Y%m%dT%H%M%SZ")
        ))
    });
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create {}", dir.display()))
            .map_err(CliError::failure)?;
    }
    let json = serde_json::to_string_pretty(&res).map_err(CliError::failure)?;
    std::fs::write(&out, json)
        .with_context(|| format!("cannot write {}", out.display()))
        .map_err(CliError::failure)?;
    let md = res.markdown();
    let md_path = out.with_extension("md");
    std::fs::write(&md_path, &md)
        .with_context(|| format!("cannot write {}", md_path.display()))
        .map_err(CliError::failure)?;
    println!("{md}");
    eprintln!(
        "qexp bench: results in {} and {}",
        out.display(),
        md_path.display()
    );
    Ok(0)
}

/// Starts `qexp bench --serve` and reads the URL it prints.
fn spawn_server() -> anyhow::Result<(Child, String)> {
    let exe = std::env::current_exe().context("cannot find the qexp executable")?;
    // The server holds one socket per stream too: give it the same high limit.
    qexp_bench::process::raise_nofile();
    let mut child = Command::new(exe)
        .args(["bench", "--serve"])
        .stdout(Stdio::piped())
        .stdin(Stdio::null())
        .spawn()
        .context("cannot start the bench server")?;
    let stdout = child
        .stdout
        .take()
        .context("no stdout from the bench server")?;
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .context("cannot read the bench server's address")?;
    match line.trim().strip_prefix(SERVING) {
        Some(url) => Ok((child, url.to_string())),
        None => {
            let _ = child.kill();
            anyhow::bail!("the bench server said {line:?} instead of its address")
        }
    }
}

/// A fresh scratch folder for the bench's runs.
fn tempfile_dir() -> anyhow::Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!("qexp-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    Ok(dir)
}
