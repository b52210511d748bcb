//! `qexp upload`, `qexp download`, and the object-store side of `qexp run
//! --upload` and of `qexp merge` given URLs: a run folder goes to
//! `<url>/<experiment>/<run-folder>/`.

use crate::{CliError, DownloadArgs, UploadArgs};
use qexp_objstore::{Follow, Mirror, ObjstoreError, Remote};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Exit 2 for what the user can fix (the URL, the credentials, a folder in
/// the way); exit 1 for a store that failed or a disk that did.
fn cli(e: ObjstoreError) -> CliError {
    match e {
        ObjstoreError::Store { .. } | ObjstoreError::Io { .. } => CliError::failure(e),
        _ => CliError::input(e),
    }
}

/// The store at `url`, from this process's environment.
fn open(url: &str) -> Result<Remote, CliError> {
    Remote::open(url).map_err(cli)
}

/// The name a run folder goes under in the store: its manifest's (the run
/// id, and the shard), whatever the local folder is called; the folder's
/// own name when the manifest cannot be read.
fn folder_name(dir: &Path) -> String {
    qexp_store::read_manifest(dir).map_or_else(
        |_| {
            dir.file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default()
                .to_string()
        },
        |m| m.folder_name(),
    )
}

/// Where the run folder `dir` of `experiment` goes under `base`, and the
/// mirror that sends it (request rows before the point rows that mark them
/// complete, the manifest last; the lock and files being written never).
fn mirror(base: &Remote, experiment: &str, dir: &Path) -> Result<Mirror, ObjstoreError> {
    let dest = base.join(experiment)?.join(&folder_name(dir))?;
    Ok(Mirror::new(dest)
        .order(qexp_store::copy_rank)
        .skip(qexp_store::transient_file))
}

/// `qexp run --upload URL`: checks the store before anything is measured
/// (a bad URL, no credentials, a store that cannot be reached or not
/// written to: exit 2; for a new run whose folder name is known already,
/// `fresh`, a destination that holds objects: exit 2, since the run's
/// uploads would replace them), then follows the run folder that `folder`
/// will name.
pub(crate) async fn follow(
    url: &str,
    experiment: &str,
    fresh: Option<&str>,
    folder: Arc<OnceLock<PathBuf>>,
    every_s: f64,
) -> Result<Follow, CliError> {
    let every = match Duration::try_from_secs_f64(every_s) {
        Ok(d) if every_s > 0.0 => d,
        _ => {
            return Err(CliError::input(anyhow::anyhow!(
                "--upload-every {every_s}: give a number of seconds above 0"
            )))
        }
    };
    // The checks on a client of their own: the upload thread's client
    // must not reuse a connection opened on this runtime, whose workers
    // time the requests being measured.
    let probe = open(url)?;
    probe.probe_write().await.map_err(CliError::input)?;
    if let Some(name) = fresh {
        let dest = probe
            .join(experiment)
            .and_then(|e| e.join(name))
            .map_err(cli)?;
        if !dest.is_empty().await.map_err(CliError::input)? {
            return Err(CliError::input(anyhow::anyhow!(
                "{} already holds a run folder (a run with this --run-id was uploaded before); \
                 its uploads would replace it: give another --run-id, or finish that run with \
                 qexp download {} DIR, then qexp run --resume DIR --upload {url}",
                dest.url(),
                dest.url()
            )));
        }
    }
    let base = open(url)?;
    let experiment = experiment.to_string();
    Follow::start(folder, every, move |dir| mirror(&base, &experiment, dir)).map_err(cli)
}

/// Ends a [`follow`]: the last upload, after the run ended however it
/// ended. Says where the folder went, or why it did not get there and the
/// command that sends it.
pub(crate) async fn finish(follow: Follow, url: &str) -> Result<(), CliError> {
    match follow.finish().await {
        None => Ok(()),
        Some((dir, Ok(s))) => {
            eprintln!(
                "qexp: uploaded {} to {url} ({} files sent, {} up to date, {} removed)",
                dir.display(),
                s.uploaded,
                s.unchanged,
                s.deleted
            );
            Ok(())
        }
        Some((dir, Err(e))) => Err(CliError::failure(anyhow::anyhow!(
            "the run is saved in {}, but its upload failed: {}; send it with: qexp upload {} {url}",
            dir.display(),
            qexp_types::error::chain(&e),
            dir.display()
        ))),
    }
}

/// `qexp upload RUN_DIR URL`.
pub(crate) async fn upload(args: UploadArgs) -> Result<u8, CliError> {
    let manifest = qexp_store::read_manifest(&args.run).map_err(CliError::input)?;
    // A run still writing the folder uploads it itself (`--upload`); two
    // uploaders of one folder would delete each other's objects.
    let _lock = qexp_store::RunLock::acquire(&args.run).map_err(CliError::input)?;
    let base = open(&args.url)?;
    let mut m = mirror(&base, &manifest.experiment, &args.run).map_err(cli)?;
    let s = m.sync(&args.run).await.map_err(cli)?;
    println!(
        "uploaded {} to {} ({} files, {} bytes sent; {} removed)",
        args.run.display(),
        m.dest().url(),
        s.uploaded,
        s.bytes,
        s.deleted
    );
    Ok(0)
}

/// `qexp download URL DIR`.
pub(crate) async fn download(args: DownloadArgs) -> Result<u8, CliError> {
    let src = open(&args.url)?;
    let d = qexp_objstore::download(&src, &args.dir)
        .await
        .map_err(cli)?;
    report_download(&src, &args.dir, d);
    Ok(0)
}

fn report_download(src: &Remote, dir: &Path, d: qexp_objstore::Downloaded) {
    if d.up_to_date {
        eprintln!("qexp: {} already holds {}", dir.display(), src.url());
    } else {
        eprintln!(
            "qexp: downloaded {} to {} ({} files, {} bytes)",
            src.url(),
            dir.display(),
            d.files,
            d.bytes
        );
    }
}

/// The local folders of `qexp merge`'s shards: each one given as a URL is
/// downloaded into `cache` under its last name (where `qexp run` would
/// have written it), each path kept as given.
pub(crate) async fn local_shards(
    shards: &[String],
    cache: &Path,
) -> Result<Vec<PathBuf>, CliError> {
    let mut out = Vec::new();
    for s in shards {
        if !qexp_objstore::is_url(s) {
            out.push(PathBuf::from(s));
            continue;
        }
        let src = open(s)?;
        let Some(name) = src.last_name().map(str::to_string) else {
            return Err(CliError::input(anyhow::anyhow!(
                "{s}: name a shard's folder, e.g. s3://BUCKET/PREFIX/<experiment>/<run-id>-shard0-of-4"
            )));
        };
        let dir = cache.join(name);
        let d = qexp_objstore::download(&src, &dir).await.map_err(cli)?;
        report_download(&src, &dir, d);
        out.push(dir);
    }
    Ok(out)
}
