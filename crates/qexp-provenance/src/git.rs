//! The git state (commit, branch, dirty, remote without credentials) of the
//! repository that holds a plan.

use serde::{Deserialize, Serialize};
use std::path::Path;

/// The git state of the repository that holds a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GitInfo {
    /// HEAD commit SHA, absent in a repository without commits.
    pub commit: Option<String>,
    /// Current branch, absent when HEAD is detached.
    pub branch: Option<String>,
    /// True when tracked files differ from HEAD or untracked files exist;
    /// `None` when git could not tell (qexp never claims a tree it could not check is clean).
    pub dirty: Option<bool>,
    /// URL of `origin`, with any user:password removed.
    pub remote: Option<String>,
}

/// Git state of the repository containing `path`; `None` outside git.
pub fn git_info(path: &Path) -> Option<GitInfo> {
    let dir = if path.is_dir() { path } else { path.parent()? };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let repo = git2::Repository::discover(dir).ok()?;
    let head = repo.head().ok();
    let commit = head
        .as_ref()
        .and_then(|h| h.peel_to_commit().ok())
        .map(|c| c.id().to_string());
    let branch = head
        .as_ref()
        .filter(|h| h.is_branch())
        .and_then(|h| h.shorthand().map(str::to_string));
    let mut opts = git2::StatusOptions::new();
    opts.include_untracked(true).include_ignored(false);
    let dirty = repo.statuses(Some(&mut opts)).ok().map(|s| !s.is_empty());
    let remote = repo
        .find_remote("origin")
        .ok()
        .and_then(|r| r.url().map(strip_credentials));
    Some(GitInfo {
        commit,
        branch,
        dirty,
        remote,
    })
}

/// Removes `user:pass@` from URLs so secrets never reach a manifest.
fn strip_credentials(url: &str) -> String {
    match (url.find("://"), url.find('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            format!("{}{}", &url[..scheme + 3], &url[at + 1..])
        }
        _ => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_stripped() {
        assert_eq!(
            strip_credentials("https://u:tok@host/x.git"),
            "https://host/x.git"
        );
        assert_eq!(strip_credentials("git@host:x.git"), "git@host:x.git");
        assert_eq!(
            strip_credentials("https://host/x.git"),
            "https://host/x.git"
        );
    }

    #[test]
    fn outside_git_is_none_and_inside_is_some() {
        let dir = std::env::temp_dir().join(format!("qexp-git-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let repo = git2::Repository::init(&dir).unwrap();
        std::fs::write(dir.join("plan.toml"), "x").unwrap();
        let info = git_info(&dir.join("plan.toml")).unwrap();
        assert_eq!(
            info.dirty,
            Some(true),
            "an untracked plan makes the tree dirty"
        );
        assert_eq!(info.commit, None);
        drop(repo);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_tree_git_cannot_read_is_unknown_not_clean() {
        let dir = std::env::temp_dir().join(format!("qexp-git-unknown-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        git2::Repository::init(&dir).unwrap();
        std::fs::write(dir.join("plan.toml"), "x").unwrap();
        // A corrupt index makes `statuses()` fail while the repository still opens.
        std::fs::write(dir.join(".git/index"), b"not an index").unwrap();
        let info = git_info(&dir.join("plan.toml"));
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(
            info.unwrap().dirty,
            None,
            "a tree git could not check is unknown"
        );
    }

    #[test]
    fn manifests_written_with_a_plain_flag_still_read() {
        let g: GitInfo =
            serde_json::from_str(r#"{"commit":null,"branch":null,"dirty":false,"remote":null}"#)
                .unwrap();
        assert_eq!(g.dirty, Some(false));
    }
}
