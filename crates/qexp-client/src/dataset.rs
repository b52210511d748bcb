//! Prompt datasets from local files: JSONL with an OpenAI `messages` array
//! or a `prompt` string per line, and the ShareGPT JSON layout (an array of
//! `{"conversations": [{"from": "human", "value": …}, …]}`).
//!
//! Each entry becomes the text of one user turn: a `prompt` as written;
//! `messages` up to the first assistant reply (system and user texts joined
//! by blank lines); ShareGPT likewise up to the first `gpt` turn. A JSONL
//! entry may carry images: an `images` array of local file paths (relative
//! to the dataset's folder) or data URLs, and the `image_url` parts of its
//! messages; each is read and checked to be an image when the file loads.
//! Errors name the file and the line of the offending entry. Nothing is
//! fetched: the user names a file, and an image given by an http(s) URL is
//! refused.

use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The layout of a dataset file: the plan's `[workload.dataset] format`,
/// one enum from the plan to the reader.
pub use qexp_plan::DatasetFormat;

/// A dataset read into memory.
#[derive(Debug, Clone)]
pub struct Dataset {
    /// Prompt texts, in file order.
    pub prompts: Vec<String>,
    /// Each prompt's images (empty for none), by position in `prompts`.
    pub images: Vec<Vec<qexp_types::image::Image>>,
    /// SHA-256 of the file's bytes, hex.
    pub sha256: String,
}

/// Why a dataset could not be used.
#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    /// The file could not be read.
    #[error("cannot read dataset {}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// An entry is malformed.
    #[error("{}:{line}: {message}", path.display())]
    Entry {
        /// The file.
        path: PathBuf,
        /// 1-based line where the entry starts (or the syntax error is).
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The file holds no entry.
    #[error("{}: the dataset holds no prompts", path.display())]
    Empty {
        /// The file.
        path: PathBuf,
    },
}

#[derive(Deserialize)]
struct JsonlEntry {
    prompt: Option<String>,
    messages: Option<Vec<Message>>,
    #[serde(default)]
    images: Vec<String>,
}

#[derive(Deserialize)]
struct Message {
    role: String,
    content: Value,
}

#[derive(Deserialize)]
struct ShareGptEntry {
    conversations: Vec<Turn>,
}

#[derive(Deserialize)]
struct Turn {
    from: String,
    value: String,
}

impl Dataset {
    /// Reads and parses `path` in `format`.
    pub fn load(path: &Path, format: DatasetFormat) -> Result<Dataset, DatasetError> {
        let bytes = std::fs::read(path).map_err(|source| DatasetError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let sha256 = hex_digest(&bytes);
        let text = String::from_utf8(bytes).map_err(|e| {
            let line = 1 + e.as_bytes()[..e.utf8_error().valid_up_to()]
                .iter()
                .filter(|&&b| b == b'\n')
                .count();
            entry_error(path, line, "not UTF-8 text")
        })?;
        let (prompts, images) = match format {
            DatasetFormat::Jsonl => parse_jsonl(path, &text)?,
            DatasetFormat::Sharegpt => {
                let prompts = parse_sharegpt(path, &text)?;
                let none = vec![Vec::new(); prompts.len()];
                (prompts, none)
            }
        };
        if prompts.is_empty() {
            return Err(DatasetError::Empty {
                path: path.to_path_buf(),
            });
        }
        Ok(Dataset {
            prompts,
            images,
            sha256,
        })
    }
}

fn hex_digest(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn entry_error(path: &Path, line: usize, message: impl Into<String>) -> DatasetError {
    DatasetError::Entry {
        path: path.to_path_buf(),
        line,
        message: message.into(),
    }
}

/// An entry's image: a data URL, or a file relative to the dataset's folder.
fn entry_image(path: &Path, given: &str) -> Result<qexp_types::image::Image, String> {
    if given.starts_with("data:") {
        return qexp_types::image::from_data_url(given).map_err(|e| {
            format!(
                "image `{}…` {e}",
                given.chars().take(32).collect::<String>()
            )
        });
    }
    if given.starts_with("http://") || given.starts_with("https://") {
        return Err(format!("image `{given}` is a web address; qexp fetches nothing: give a local file or a data URL"));
    }
    let file = path.parent().unwrap_or(Path::new("")).join(given);
    let bytes =
        std::fs::read(&file).map_err(|e| format!("cannot read image {}: {e}", file.display()))?;
    qexp_types::image::from_bytes(&bytes).map_err(|e| format!("image {} {e}", file.display()))
}

/// The image URLs among a message's content parts.
fn content_images(content: &Value) -> Vec<&str> {
    match content {
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.pointer("/image_url/url").and_then(Value::as_str))
            .collect(),
        _ => Vec::new(),
    }
}

type Parsed = (Vec<String>, Vec<Vec<qexp_types::image::Image>>);

fn parse_jsonl(path: &Path, text: &str) -> Result<Parsed, DatasetError> {
    let mut out = Vec::new();
    let mut images = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |m: String| entry_error(path, i + 1, m);
        let entry: JsonlEntry =
            serde_json::from_str(line).map_err(|e| bad(format!("not a JSONL entry: {e}")))?;
        let mut given: Vec<String> = entry.images;
        let prompt = match (entry.prompt, entry.messages) {
            (Some(p), None) => p,
            (None, Some(messages)) => {
                let mut texts = Vec::new();
                for m in &messages {
                    if m.role == "assistant" {
                        break;
                    }
                    given.extend(content_images(&m.content).into_iter().map(str::to_string));
                    texts.push(content_text(&m.content).ok_or_else(|| {
                        bad(format!("a {} message's content is not text", m.role))
                    })?);
                }
                texts.join("\n\n")
            }
            _ => {
                return Err(bad(
                    "expected exactly one of a `prompt` string and a `messages` array".into(),
                ))
            }
        };
        if prompt.trim().is_empty() {
            return Err(bad("the prompt is empty".into()));
        }
        out.push(prompt);
        let read: Result<Vec<_>, String> = given.iter().map(|g| entry_image(path, g)).collect();
        images.push(read.map_err(bad)?);
    }
    Ok((out, images))
}

/// The text of a message's content: a string, or the text parts of an array.
fn content_text(content: &Value) -> Option<String> {
    match content {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => Some(
            parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join(" "),
        ),
        _ => None,
    }
}

fn parse_sharegpt(path: &Path, text: &str) -> Result<Vec<String>, DatasetError> {
    let items: Vec<Value> = serde_json::from_str(text).map_err(|e| {
        entry_error(
            path,
            e.line().max(1),
            format!("not a ShareGPT JSON array: {e}"),
        )
    })?;
    let lines = element_lines(text);
    let mut out = Vec::new();
    for (i, item) in items.into_iter().enumerate() {
        let line = lines.get(i).copied().unwrap_or(1);
        let entry: ShareGptEntry = serde_json::from_value(item)
            .map_err(|e| entry_error(path, line, format!("not a ShareGPT entry: {e}")))?;
        let texts: Vec<&str> = entry
            .conversations
            .iter()
            .take_while(|t| t.from != "gpt")
            .map(|t| t.value.as_str())
            .collect();
        if !entry.conversations.iter().any(|t| t.from == "human") {
            return Err(entry_error(
                path,
                line,
                "the conversation has no human turn",
            ));
        }
        out.push(texts.join("\n\n"));
    }
    Ok(out)
}

/// 1-based line of the start of each element of the top-level JSON array in `text`.
fn element_lines(text: &str) -> Vec<usize> {
    let (mut depth, mut in_string, mut escaped, mut line) = (0usize, false, false, 1usize);
    let mut expecting = false;
    let mut out = Vec::new();
    for c in text.chars() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            if c == '\n' {
                line += 1;
            }
            continue;
        }
        if depth == 1 && expecting && !c.is_whitespace() && c != ']' {
            out.push(line);
            expecting = false;
        }
        match c {
            '\n' => line += 1,
            '"' => in_string = true,
            '[' | '{' => {
                depth += 1;
                if depth == 1 {
                    expecting = true;
                }
            }
            ']' | '}' => depth = depth.saturating_sub(1),
            ',' if depth == 1 => expecting = true,
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(name: &str, text: &str, format: DatasetFormat) -> Result<Dataset, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        Dataset::load(&path, format)
            .map_err(|e| e.to_string().replace(&*dir.path().to_string_lossy(), "DIR"))
    }

    #[test]
    fn jsonl_prompts_and_messages() {
        let text = concat!(
            "{\"prompt\": \"What is a prefix cache?\"}\n",
            "\n",
            "{\"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"}, {\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"Why\"}, {\"type\": \"text\", \"text\": \"batch?\"}]}, {\"role\": \"assistant\", \"content\": \"To share weights.\"}]}\n",
        );
        let d = load("d.jsonl", text, DatasetFormat::Jsonl).unwrap();
        assert_eq!(
            d.prompts,
            ["What is a prefix cache?", "Be brief.\n\nWhy batch?"]
        );
        assert_eq!(d.sha256, hex_digest(text.as_bytes()));
        assert_eq!(d.sha256.len(), 64);
    }

    #[test]
    fn jsonl_errors_name_file_and_line() {
        let e = load(
            "d.jsonl",
            "{\"prompt\": \"a\"}\n{\"prompt\": \n",
            DatasetFormat::Jsonl,
        )
        .unwrap_err();
        assert!(e.starts_with("DIR/d.jsonl:2: not a JSONL entry: "), "{e}");
        let e = load("d.jsonl", "\n\n{\"text\": \"a\"}\n", DatasetFormat::Jsonl).unwrap_err();
        assert_eq!(
            e,
            "DIR/d.jsonl:3: expected exactly one of a `prompt` string and a `messages` array"
        );
        let e = load(
            "d.jsonl",
            "{\"messages\": [{\"role\": \"user\", \"content\": 3}]}",
            DatasetFormat::Jsonl,
        )
        .unwrap_err();
        assert_eq!(e, "DIR/d.jsonl:1: a user message's content is not text");
        let e = load("d.jsonl", "\n  \n", DatasetFormat::Jsonl).unwrap_err();
        assert_eq!(e, "DIR/d.jsonl: the dataset holds no prompts");
        let e = load("d.jsonl", "{\"prompt\": \" \"}", DatasetFormat::Jsonl).unwrap_err();
        assert_eq!(e, "DIR/d.jsonl:1: the prompt is empty");
    }

    #[test]
    fn sharegpt_first_human_turn_and_located_errors() {
        let text = "[\n  {\"conversations\": [\n    {\"from\": \"system\", \"value\": \"Be kind.\"},\n    {\"from\": \"human\", \"value\": \"Hi [there], \\\"you\\\"\"},\n    {\"from\": \"gpt\", \"value\": \"Hello.\"}\n  ]},\n  {\"conversations\": [{\"from\": \"human\", \"value\": \"Next\"}]}\n]\n";
        let d = load("s.json", text, DatasetFormat::Sharegpt).unwrap();
        assert_eq!(d.prompts, ["Be kind.\n\nHi [there], \"you\"", "Next"]);
        let bad = text.replace(
            "{\"from\": \"human\", \"value\": \"Next\"}",
            "{\"from\": \"human\"}",
        );
        let e = load("s.json", &bad, DatasetFormat::Sharegpt).unwrap_err();
        assert!(
            e.starts_with("DIR/s.json:7: not a ShareGPT entry: missing field `value`"),
            "{e}"
        );
        let bad = text.replace(
            "\"human\", \"value\": \"Next\"",
            "\"gpt\", \"value\": \"Next\"",
        );
        let e = load("s.json", &bad, DatasetFormat::Sharegpt).unwrap_err();
        assert_eq!(e, "DIR/s.json:7: the conversation has no human turn");
        let e = load(
            "s.json",
            "[\n{\"conversations\": [}\n]",
            DatasetFormat::Sharegpt,
        )
        .unwrap_err();
        assert!(
            e.starts_with("DIR/s.json:2: not a ShareGPT JSON array: "),
            "{e}"
        );
        let e = load("s.json", "[]", DatasetFormat::Sharegpt).unwrap_err();
        assert_eq!(e, "DIR/s.json: the dataset holds no prompts");
    }
}
