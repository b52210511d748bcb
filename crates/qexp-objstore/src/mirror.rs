//! A local folder kept copied under a prefix of a store: each sync uploads
//! the files that are new or changed since the last one and deletes the
//! objects whose file is gone (a run merges its parts into two files and
//! removes them: a copy that kept both would count those rows twice).

use crate::error::ObjstoreError;
use crate::remote::Remote;
use futures_util::StreamExt as _;
use object_store::{ObjectStoreExt as _, PutPayload, WriteMultipart};
use std::collections::{BTreeMap, HashMap};
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Files up to this size go up in one request; larger ones in parts of it.
const PART_BYTES: usize = 16 * 1024 * 1024;
/// Parts of one file in flight at once.
const PARTS_IN_FLIGHT: usize = 4;

/// What one sync did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Synced {
    /// Files uploaded.
    pub uploaded: usize,
    /// Their bytes.
    pub bytes: u64,
    /// Objects deleted because their file is gone.
    pub deleted: usize,
    /// Files already up to date.
    pub unchanged: usize,
}

/// A file as a sync saw it: changed when either differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
}

/// Copies one local folder to one prefix, again and again, sending only
/// what changed since its own last sync.
#[derive(Debug)]
pub struct Mirror {
    dest: Remote,
    order: fn(&str) -> u8,
    skip: fn(&str) -> bool,
    sent: HashMap<String, Stamp>,
}

impl Mirror {
    /// A mirror to `dest`, which has sent nothing yet.
    pub fn new(dest: Remote) -> Mirror {
        Mirror {
            dest,
            order: |_| 0,
            skip: |_| false,
            sent: HashMap::new(),
        }
    }

    /// Leave out files whose name `skip` picks (a writer's lock, a file
    /// still being written and renamed into place when whole).
    pub fn skip(mut self, skip: fn(&str) -> bool) -> Mirror {
        self.skip = skip;
        self
    }

    /// The order of a sync's uploads: by `order` of each file's
    /// `/`-separated path (lowest first), then oldest first, so that a copy
    /// cut short holds what the writer wrote first (a run's request rows
    /// before the point rows that mark them complete, its manifest last).
    pub fn order(mut self, order: fn(&str) -> u8) -> Mirror {
        self.order = order;
        self
    }

    /// Where the folder goes.
    pub fn dest(&self) -> &Remote {
        &self.dest
    }

    /// Makes the prefix hold what `dir` holds now: uploads new and changed
    /// files (in [`Mirror::order`]), then deletes the objects whose file
    /// is gone (in the reverse order). A file that vanishes while it is read (a part
    /// the run just merged) is left for the next sync to delete.
    pub async fn sync(&mut self, dir: &Path) -> Result<Synced, ObjstoreError> {
        let local = walk(dir, self.skip)?;
        let mut done = Synced::default();
        let mut queue: Vec<_> = local.iter().collect();
        queue.sort_by_key(|(rel, (_, stamp))| ((self.order)(rel), stamp.modified, *rel));
        for (rel, (path, stamp)) in queue {
            if self.sent.get(rel) == Some(stamp) {
                done.unchanged += 1;
                continue;
            }
            match self.upload(rel, path).await? {
                Some(bytes) => {
                    done.uploaded += 1;
                    done.bytes += bytes;
                    self.sent.insert(rel.clone(), *stamp);
                }
                None => continue,
            }
        }
        let mut listed = self.dest.store().list(Some(self.dest.prefix()));
        let mut gone = Vec::new();
        let mut there = std::collections::HashSet::new();
        while let Some(meta) = listed.next().await {
            let meta = meta.map_err(|e| ObjstoreError::store(self.dest.url(), "list", e))?;
            let rel = self.dest.relative(&meta.location);
            if rel.as_ref().is_some_and(|rel| local.contains_key(rel)) {
                there.extend(rel);
            } else {
                gone.push(meta.location);
            }
        }
        // A file sent before whose object someone else removed is sent again next time.
        self.sent.retain(|rel, _| there.contains(rel));
        // Point rows before the request rows they mark complete (the
        // reverse of the uploads), so a copy cut short between two deletes
        // never holds a point without its requests.
        gone.sort_by_key(|l| {
            let rel = self.dest.relative(l).unwrap_or_default();
            (std::cmp::Reverse((self.order)(&rel)), rel)
        });
        for location in gone {
            match self.dest.store().delete(&location).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => done.deleted += 1,
                Err(e) => return Err(ObjstoreError::store(self.dest.url(), "delete in", e)),
            }
            if let Some(rel) = self.dest.relative(&location) {
                self.sent.remove(&rel);
            }
        }
        Ok(done)
    }

    /// Uploads `path` as `rel`; its bytes, or None when it is gone.
    async fn upload(&self, rel: &str, path: &Path) -> Result<Option<u64>, ObjstoreError> {
        let url = self.dest.url();
        let fail = |e| ObjstoreError::store(url, "upload to", e);
        let mut file = match std::fs::File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(ObjstoreError::io("cannot read", path)(e)),
        };
        let location = self.dest.object(rel);
        let store = self.dest.store();
        let first = read_chunk(&mut file, path)?;
        if first.len() < PART_BYTES {
            let n = first.len() as u64;
            store
                .put(&location, PutPayload::from(first))
                .await
                .map_err(fail)?;
            return Ok(Some(n));
        }
        let upload = store.put_multipart(&location).await.map_err(fail)?;
        let mut parts = WriteMultipart::new_with_chunk_size(upload, PART_BYTES);
        let mut n = 0u64;
        let mut chunk = first;
        while !chunk.is_empty() {
            n += chunk.len() as u64;
            parts
                .wait_for_capacity(PARTS_IN_FLIGHT)
                .await
                .map_err(fail)?;
            parts.write(&chunk);
            chunk = match read_chunk(&mut file, path) {
                Ok(c) => c,
                Err(e) => {
                    let _ = parts.abort().await;
                    return Err(e);
                }
            };
        }
        parts.finish().await.map_err(fail)?;
        Ok(Some(n))
    }
}

/// Up to [`PART_BYTES`] of `file` (fewer only at its end).
fn read_chunk(file: &mut std::fs::File, path: &Path) -> Result<Vec<u8>, ObjstoreError> {
    let mut buf = Vec::with_capacity(PART_BYTES);
    file.by_ref()
        .take(PART_BYTES as u64)
        .read_to_end(&mut buf)
        .map_err(ObjstoreError::io("cannot read", path))?;
    Ok(buf)
}

/// Every file under `dir` by its `/`-separated path, but those `skip` picks.
fn walk(
    dir: &Path,
    skip: fn(&str) -> bool,
) -> Result<BTreeMap<String, (PathBuf, Stamp)>, ObjstoreError> {
    let mut out = BTreeMap::new();
    let mut todo = vec![(dir.to_path_buf(), String::new())];
    while let Some((folder, rel)) = todo.pop() {
        let entries =
            std::fs::read_dir(&folder).map_err(ObjstoreError::io("cannot list", &folder))?;
        for entry in entries {
            let entry = entry.map_err(ObjstoreError::io("cannot list", &folder))?;
            let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                tracing::warn!(
                    "qexp: {} is not named in UTF-8; not uploaded",
                    entry.path().display()
                );
                continue;
            };
            let path = entry.path();
            let child = if rel.is_empty() {
                name.clone()
            } else {
                format!("{rel}/{name}")
            };
            // Gone since the listing: nothing to send.
            let Ok(meta) = std::fs::metadata(&path) else {
                continue;
            };
            if meta.is_dir() {
                todo.push((path, child));
            } else if meta.is_file() && !skip(&name) {
                let stamp = Stamp {
                    len: meta.len(),
                    modified: meta.modified().ok(),
                };
                out.insert(child, (path, stamp));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::download::download;

    fn remote(dir: &Path) -> Remote {
        Remote::open_with(&format!("file://{}", dir.display()), Vec::new()).unwrap()
    }

    fn put(dir: &Path, rel: &str, text: &str) {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    fn files(dir: &Path) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = walk(dir, |_| false)
            .unwrap()
            .into_iter()
            .map(|(rel, (p, _))| (rel, std::fs::read_to_string(p).unwrap()))
            .collect();
        out.sort();
        out
    }

    /// Upload, change, upload again: the store holds what the folder holds
    /// (a removed file's object deleted, transient files never sent), and a
    /// download gives the folder back.
    #[tokio::test]
    async fn the_store_follows_the_folder_and_gives_it_back() {
        let tmp = tempfile::tempdir().unwrap();
        let (run, store) = (tmp.path().join("run"), tmp.path().join("store"));
        put(&run, "manifest.json", "{\"status\": \"running\"}");
        put(&run, "parts/requests-00001.parquet", "part 1");
        put(&run, "journal/requests-t0001-p00002.jsonl", "{\"a\":1}\n");
        put(&run, ".lock", "");
        put(&run, "manifest.tmp", "half");
        let dest = remote(&store).join("exp").unwrap().join("run").unwrap();
        let mut m = Mirror::new(dest.clone())
            .order(|rel| u8::from(rel == "manifest.json"))
            .skip(|n| n == ".lock" || n.ends_with(".tmp"));
        let s = m.sync(&run).await.unwrap();
        assert_eq!((s.uploaded, s.deleted, s.unchanged), (3, 0, 0));
        let s = m.sync(&run).await.unwrap();
        assert_eq!((s.uploaded, s.deleted, s.unchanged), (0, 0, 3));
        // The run merges its parts and ends.
        std::fs::remove_dir_all(run.join("parts")).unwrap();
        std::fs::remove_file(run.join("journal/requests-t0001-p00002.jsonl")).unwrap();
        put(&run, "requests.parquet", "all rows");
        put(&run, "manifest.json", "{\"status\": \"complete\"}");
        let s = m.sync(&run).await.unwrap();
        assert_eq!((s.uploaded, s.deleted), (2, 2));
        let back = tmp.path().join("back");
        let d = download(&dest, &back).await.unwrap();
        assert_eq!(d.files, 2);
        let sent: Vec<_> = files(&run)
            .into_iter()
            .filter(|(rel, _)| rel != ".lock" && !rel.ends_with(".tmp"))
            .collect();
        assert_eq!(files(&back), sent);
        // Again: nothing to fetch; a folder that differs is refused.
        assert!(download(&dest, &back).await.unwrap().up_to_date);
        put(&back, "requests.parquet", "other rows!");
        let e = download(&dest, &back).await.unwrap_err().to_string();
        assert!(e.contains("exists and is not a copy of"), "{e}");
        let nothing = remote(&store).join("none").unwrap();
        let e = download(&nothing, &tmp.path().join("n")).await.unwrap_err();
        assert!(matches!(e, ObjstoreError::Empty { .. }), "{e}");
    }
}
