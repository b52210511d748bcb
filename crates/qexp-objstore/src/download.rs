//! A prefix of a store copied into a local folder, one file per object.

use crate::error::ObjstoreError;
use crate::remote::Remote;
use futures_util::StreamExt as _;
use object_store::ObjectStoreExt as _;
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::Path;

/// What [`download`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Downloaded {
    /// Files written.
    pub files: usize,
    /// Their bytes.
    pub bytes: u64,
    /// True when the folder already held exactly what the store holds.
    pub up_to_date: bool,
}

/// Copies every object under `src` into `dir`, keeping the paths below
/// the prefix. `dir` must not exist, or hold exactly the store's files
/// already (by name and size; then nothing is fetched): a folder that holds
/// something else is refused rather than mixed with the store's copy.
pub async fn download(src: &Remote, dir: &Path) -> Result<Downloaded, ObjstoreError> {
    let mut objects = BTreeMap::new();
    let mut listed = src.store().list(Some(src.prefix()));
    while let Some(meta) = listed.next().await {
        let meta = meta.map_err(|e| ObjstoreError::store(src.url(), "list", e))?;
        match src.relative(&meta.location) {
            Some(rel) => {
                objects.insert(rel, (meta.location, meta.size));
            }
            None => tracing::warn!(
                "qexp: {} is not a file name below {}; not downloaded",
                meta.location,
                src.url()
            ),
        }
    }
    if objects.is_empty() {
        return Err(ObjstoreError::Empty {
            url: src.url().to_string(),
        });
    }
    if dir.exists() {
        let differ = objects
            .iter()
            .filter(|(rel, (_, size))| {
                std::fs::metadata(dir.join(rel)).map_or(true, |m| m.len() != *size)
            })
            .count();
        if differ == 0 {
            return Ok(Downloaded {
                up_to_date: true,
                ..Downloaded::default()
            });
        }
        return Err(ObjstoreError::Differs {
            path: dir.to_path_buf(),
            url: src.url().to_string(),
            differ,
        });
    }
    // Into a folder beside `dir`, renamed into place when whole: a download
    // cut short leaves no folder a reader could take for a run.
    let partial = dir.with_file_name(format!(
        ".{}.download",
        dir.file_name().and_then(|n| n.to_str()).unwrap_or("run")
    ));
    if partial.exists() {
        std::fs::remove_dir_all(&partial).map_err(ObjstoreError::io("cannot remove", &partial))?;
    }
    match fetch(src, &objects, &partial).await {
        Ok(done) => {
            std::fs::rename(&partial, dir).map_err(ObjstoreError::io("cannot rename into", dir))?;
            Ok(done)
        }
        Err(e) => {
            // A download cut short (a full disk, a store that failed)
            // leaves nothing behind to fill the disk.
            let _ = std::fs::remove_dir_all(&partial);
            Err(e)
        }
    }
}

/// Every object of `objects` into `partial`, each file flushed to disk.
async fn fetch(
    src: &Remote,
    objects: &BTreeMap<String, (object_store::path::Path, u64)>,
    partial: &Path,
) -> Result<Downloaded, ObjstoreError> {
    let mut done = Downloaded::default();
    for (rel, (location, _)) in objects {
        let path = partial.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(ObjstoreError::io("cannot create", parent))?;
        }
        let fail = |e| ObjstoreError::store(src.url(), "download from", e);
        let mut file =
            std::fs::File::create(&path).map_err(ObjstoreError::io("cannot create", &path))?;
        let mut body = src.store().get(location).await.map_err(fail)?.into_stream();
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(fail)?;
            file.write_all(&chunk)
                .map_err(ObjstoreError::io("cannot write", &path))?;
            done.bytes += chunk.len() as u64;
        }
        file.sync_all()
            .map_err(ObjstoreError::io("cannot write", &path))?;
        done.files += 1;
    }
    Ok(done)
}
