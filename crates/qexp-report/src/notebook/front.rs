//! A notebook's front matter: a TOML block between `+++` lines at the top
//! (the convention of Hugo and Zola) naming its runs.
//!
//! ```toml
//! +++
//! title = "Qwen3.6-27B on 2× A6000"
//! [runs]
//! throughput = "throughput"                     # the experiment's newest complete run
//! longctx = { experiment = "longctx", run = "20261130T101500Z-1a2b3c" }   # pinned
//! +++
//! ```

use serde::Deserialize;
use std::collections::BTreeMap;

/// Why a notebook's front matter cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum FrontMatterError {
    /// No `+++` block at the top.
    #[error("a notebook starts with a `+++` front-matter block naming its runs (see docs/reports.md \"Notebooks across runs\")")]
    Missing,
    /// The block does not end.
    #[error("the front matter opened on line 1 has no closing `+++` line")]
    Unclosed,
    /// Not valid TOML of the expected shape.
    #[error("front matter line {line}, column {column}: {message}")]
    Toml {
        /// Line in the notebook, from 1.
        line: usize,
        /// Column, from 1.
        column: usize,
        /// What toml said.
        message: String,
    },
    /// A run entry that names nothing usable.
    #[error("front matter: run `{name}`: {reason}")]
    Run {
        /// The entry's name.
        name: String,
        /// What is wrong.
        reason: String,
    },
}

/// One run a notebook names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunSpec {
    /// The name the notebook uses: `runs.<name>`.
    pub name: String,
    /// The experiment, when named.
    pub experiment: Option<String>,
    /// A pinned run id; None: the experiment's newest complete run.
    pub run_id: Option<String>,
}

/// A notebook split into its front matter and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    /// `title`, when given.
    pub title: Option<String>,
    /// The runs, in name order.
    pub runs: Vec<RunSpec>,
    /// The Markdown + tera body.
    pub body: String,
    /// The body's first line in the notebook, from 1.
    pub body_line: usize,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Front {
    title: Option<String>,
    #[serde(default)]
    runs: BTreeMap<String, Entry>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Entry {
    Experiment(String),
    Table(Table),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    experiment: Option<String>,
    run: Option<String>,
}

const FENCE: &str = "+++";

/// Splits and parses a notebook.
pub fn parse(text: &str) -> Result<Parsed, FrontMatterError> {
    let mut toml_text = String::new();
    let (mut offset, mut line_no) = (0, 0);
    let mut body_start = None;
    for line in text.split_inclusive('\n') {
        line_no += 1;
        offset += line.len();
        if line_no == 1 {
            if line.trim_end() != FENCE {
                return Err(FrontMatterError::Missing);
            }
        } else if line.trim_end() == FENCE {
            body_start = Some(offset);
            break;
        } else {
            toml_text.push_str(line);
        }
    }
    if line_no == 0 {
        return Err(FrontMatterError::Missing);
    }
    let body_start = body_start.ok_or(FrontMatterError::Unclosed)?;
    let front: Front = toml::from_str(&toml_text).map_err(|e| {
        let (line, column) = e
            .span()
            .map(|s| line_col(&toml_text, s.start))
            .unwrap_or((0, 0));
        FrontMatterError::Toml {
            line: line + 1,
            column,
            message: e.message().to_string(),
        }
    })?;
    let runs = front
        .runs
        .into_iter()
        .map(|(name, e)| spec(name, e))
        .collect::<Result<_, _>>()?;
    Ok(Parsed {
        title: front.title,
        runs,
        body: text[body_start..].to_string(),
        body_line: line_no + 1,
    })
}

/// 1-based line and column of a byte offset.
fn line_col(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

fn spec(name: String, e: Entry) -> Result<RunSpec, FrontMatterError> {
    let bad = |reason: &str| FrontMatterError::Run {
        name: name.clone(),
        reason: reason.to_string(),
    };
    let ident = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !ident {
        return Err(bad(
            "a name is letters, digits and `_`, starting with a letter (the notebook says runs.<name>)",
        ));
    }
    let (experiment, run_id) = match e {
        Entry::Experiment(x) => (Some(x), None),
        Entry::Table(t) => (t.experiment, t.run),
    };
    if experiment.is_none() && run_id.is_none() {
        return Err(bad("name an `experiment`, a pinned `run` id, or both"));
    }
    for v in experiment.iter().chain(&run_id) {
        if qexp_plan::safe_component(v).is_err() {
            return Err(bad(&format!("`{v}` is not a folder name under results/")));
        }
    }
    Ok(RunSpec {
        name,
        experiment,
        run_id,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_by_experiment_and_pinned() {
        let p = parse("+++\ntitle = \"T\"\n[runs]\na = \"throughput\"\nb = { experiment = \"longctx\", run = \"r1\" }\n+++\nBody {{ x }}\n").unwrap();
        assert_eq!(p.title.as_deref(), Some("T"));
        assert_eq!(p.runs.len(), 2);
        assert_eq!(p.runs[0].experiment.as_deref(), Some("throughput"));
        assert_eq!(p.runs[0].run_id, None);
        assert_eq!(p.runs[1].run_id.as_deref(), Some("r1"));
        assert_eq!(p.body, "Body {{ x }}\n");
        assert_eq!(p.body_line, 7);
    }

    #[test]
    fn bad_front_matter_says_where() {
        assert!(matches!(
            parse("# no front"),
            Err(FrontMatterError::Missing)
        ));
        assert!(matches!(
            parse("+++\n[runs]\n"),
            Err(FrontMatterError::Unclosed)
        ));
        let e = parse("+++\n[runs]\na = 3\n+++\n").unwrap_err().to_string();
        assert!(e.contains("line 3"), "{e}");
        let e = parse("+++\n[runs]\n\"a-b\" = \"x\"\n+++\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("run `a-b`"), "{e}");
        let e = parse("+++\n[runs]\na = \"../etc\"\n+++\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a folder name"), "{e}");
        let e = parse("+++\nrun = 1\n+++\n").unwrap_err().to_string();
        assert!(e.contains("unknown field"), "{e}");
    }
}
