//! The README's "Commands" table against the command line itself: one row
//! a command, in clap's order, each a line that links to the command's
//! section of the generated CLI reference (docs/cli.md, checked in
//! help.rs); the README's predictions and every link of the docs are true.

use clap::CommandFactory;
use qexp::Cli;
use std::collections::BTreeSet;

/// The rows of README's "Commands" table, by subcommand name.
fn readme_rows() -> Vec<(String, String)> {
    let readme = include_str!("../../../../README.md");
    let section = readme
        .split("\n## Commands\n")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .unwrap_or_default();
    section
        .lines()
        .filter_map(|l| l.strip_prefix("| [`qexp "))
        .filter_map(|l| {
            let name = l.split('`').next()?;
            Some((name.to_string(), l.to_string()))
        })
        .collect()
}

/// The longest a row of the table may be: one line a command; the flags
/// and examples live in docs/cli.md.
const ROW_CHARS: usize = 200;

#[test]
fn readme_commands_table_matches_clap() {
    let cli = Cli::command();
    let rows = readme_rows();
    let names: Vec<&str> = rows.iter().map(|(n, _)| n.as_str()).collect();
    let subcommands: Vec<&str> = cli.get_subcommands().map(|c| c.get_name()).collect();
    assert_eq!(
        names, subcommands,
        "one README row per subcommand, in order"
    );
    for (name, row) in &rows {
        assert!(
            row.starts_with(&format!("{name}`](docs/cli.md#qexp-{name}) | ")),
            "README's `qexp {name}` row does not link to its section of docs/cli.md:\n{row}"
        );
        assert!(
            row.chars().count() <= ROW_CHARS,
            "README's `qexp {name}` row is over {ROW_CHARS} characters: its detail belongs in --help"
        );
    }
}

/// Each `$ qexp predict …` line of the README's code blocks, with the lines
/// shown under it (up to the next `$` line or the block's end).
fn readme_predictions() -> Vec<(String, String)> {
    let readme = include_str!("../../../../README.md");
    let mut found: Vec<(String, String)> = Vec::new();
    let mut current: Option<(String, Vec<&str>)> = None;
    for line in readme.lines() {
        let ends = line.starts_with("$ ") || line.starts_with("```");
        if ends {
            if let Some((command, shown)) = current.take() {
                found.push((command, shown.join("\n")));
            }
        }
        match line.strip_prefix("$ qexp predict ") {
            Some(args) => current = Some((args.to_string(), Vec::new())),
            None => {
                if let Some((_, shown)) = current.as_mut() {
                    shown.push(line);
                }
            }
        }
    }
    found
}

/// The README's what-if block shows what `qexp predict` prints, line for
/// line (the `what-if:` header included).
#[test]
fn readme_predictions_are_what_qexp_prints() {
    let found = readme_predictions();
    assert!(
        found.len() >= 3,
        "no `$ qexp predict` examples in the README"
    );
    for (args, shown) in found {
        let mut argv = vec!["predict"];
        argv.extend(args.split_whitespace());
        let o = crate::common::qexp(&argv).output().unwrap();
        let printed = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "qexp predict {args}: {o:?}");
        assert_eq!(
            printed.trim_end(),
            shown.trim_end(),
            "the README shows another output for `qexp predict {args}`"
        );
    }
}

#[test]
fn command_definition_is_consistent() {
    Cli::command().debug_assert();
}

/// The repository root.
fn root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '-' || *c == ' ' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown file's headings (outside code blocks).
fn anchors(text: &str) -> BTreeSet<String> {
    let mut fenced = false;
    let mut out = BTreeSet::new();
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            out.insert(slug(line.trim_start_matches('#')));
        }
    }
    out
}

/// `(target)` of every `[text](target)` link outside code blocks and spans.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Drop code spans: a `[x](y)` inside backticks is not a link.
        let prose: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        let mut rest = prose.as_str();
        while let Some(i) = rest.find("](") {
            let after = &rest[i + 2..];
            let Some(end) = after.find(')') else { break };
            out.push(after[..end].to_string());
            rest = &after[end..];
        }
    }
    out
}

/// Every page a link or a pointer may name: README.md and docs/*.md.
fn pages() -> Vec<std::path::PathBuf> {
    let mut pages = vec![root().join("README.md")];
    let mut docs: Vec<_> = std::fs::read_dir(root().join("docs"))
        .expect("docs/ exists")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// Checks that `file` exists and, when `anchor` is given, has that heading.
fn check_target(
    from: &std::path::Path,
    file: &std::path::Path,
    anchor: Option<&str>,
) -> Option<String> {
    let Ok(text) = std::fs::read_to_string(file) else {
        return Some(format!(
            "{}: {} does not exist",
            from.display(),
            file.display()
        ));
    };
    match anchor {
        Some(a) if !anchors(&text).contains(a) => Some(format!(
            "{}: {} has no heading #{a}",
            from.display(),
            file.display()
        )),
        _ => None,
    }
}

/// Every relative link of the README and the guide points to a file that
/// exists and, with an anchor, to a heading it has.
#[test]
fn every_link_of_the_readme_and_the_docs_is_true() {
    let mut broken = Vec::new();
    let mut seen = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for target in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            seen += 1;
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let file = if path.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(path)
            };
            broken.extend(check_target(&page, &file, anchor));
        }
    }
    assert!(seen > 20, "only {seen} links found: is the parser right?");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// Source files that point a reader at the docs (`docs/x.md "Section"`,
/// `README "Section"`) point at a page and section that exist.
#[test]
fn pointers_from_the_code_to_the_docs_are_true() {
    let mut files = Vec::new();
    let mut stack = vec![
        root().join("crates"),
        root().join("experiments"),
        root().join("templates"),
        root().join("notebooks"),
    ];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().filter_map(Result::ok) {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| ["rs", "md", "tera", "toml"].iter().any(|x| e == *x))
                // This file spells the patterns it looks for.
                && !p.ends_with("tests/suite/readme.rs")
            {
                files.push(p);
            }
        }
    }
    let mut broken = Vec::new();
    let mut seen = 0;
    for f in files {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        for (i, _) in text.match_indices("docs/") {
            let rest = &text[i + 5..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_' || *c == '.')
                .collect();
            // A pointer at the end of a sentence: `… see docs/x.md.`
            let name = name.strip_suffix('.').map_or(name.clone(), str::to_string);
            if !name.ends_with(".md") {
                continue;
            }
            seen += 1;
            // An optional quoted section right after: `docs/x.md "Section"` or `, "Section"`.
            let after = rest[name.len()..].trim_start_matches([',', ' ']);
            let section = after
                .strip_prefix('"')
                .and_then(|s| s.split_once('"'))
                .map(|(s, _)| slug(s));
            broken.extend(check_target(
                &f,
                &root().join("docs").join(&name),
                section.as_deref(),
            ));
        }
        for (i, _) in text.match_indices("README") {
            let after = text[i + 6..].trim_start_matches(['\'', 's', ',', ' ']);
            if let Some((section, _)) = after.strip_prefix('"').and_then(|s| s.split_once('"')) {
                seen += 1;
                broken.extend(check_target(
                    &f,
                    &root().join("README.md"),
                    Some(&slug(section)),
                ));
            }
        }
    }
    assert!(
        seen >= 5,
        "only {seen} pointers found: is the scanner right?"
    );
    assert!(broken.is_empty(), "broken pointers:\n{}", broken.join("\n"));
}
