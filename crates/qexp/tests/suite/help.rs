//! `--help` of qexp and of every subcommand clap knows (found by walking
//! the command definition, so a new subcommand is covered without being
//! named here), rendered at clap's width without a terminal (100 columns,
//! what `qexp run --help | less` shows): each is snapshotted, and each
//! example can be pasted, because clap wrapped none of the after-help text
//! and every example line is a whole command.

use clap::CommandFactory;
use qexp::Cli;

/// clap's help width when standard output is not a terminal.
const WIDTH: usize = 100;

/// The programs an example line may start with (after `NAME=value`
/// environment assignments); any other first word is a command's tail.
const PROGRAMS: [&str; 3] = ["qexp", "kubectl", "curl"];

/// Every command under `cmd` (itself included) as (path, help), hidden
/// ones and clap's own `help` left out.
fn helps(cmd: &mut clap::Command, path: &str, out: &mut Vec<(String, String, String)>) {
    let after = cmd
        .get_after_long_help()
        .or(cmd.get_after_help())
        .map(ToString::to_string)
        .unwrap_or_default();
    out.push((path.to_string(), after, cmd.render_long_help().to_string()));
    for sub in cmd.get_subcommands_mut() {
        if sub.is_hide_set() || sub.get_name() == "help" {
            continue;
        }
        let path = format!("{path} {}", sub.get_name());
        helps(sub, &path, out);
    }
}

/// The example lines of a help text: the indented lines under `Examples:`.
fn examples(help: &str) -> Vec<&str> {
    help.lines()
        .skip_while(|l| *l != "Examples:")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .collect()
}

/// Why an example line cannot be pasted as it is, if it cannot.
fn broken(line: &str) -> Option<&'static str> {
    let command = line.split(" #").next().unwrap_or(line).trim();
    let program = command
        .split_whitespace()
        .find(|w| !(w.contains('=') && w.chars().next().is_some_and(|c| c.is_ascii_uppercase())));
    if command.ends_with('\\') {
        Some("continues on the next line")
    } else if !program.is_some_and(|p| PROGRAMS.contains(&p)) {
        Some("is the tail of a command broken across lines")
    } else {
        None
    }
}

#[test]
fn every_commands_help_is_snapshotted_with_examples_that_paste() {
    let mut cli = Cli::command().term_width(WIDTH);
    cli.build();
    let mut all = Vec::new();
    helps(&mut cli, "qexp", &mut all);
    assert!(all.len() > 2, "no subcommands found");
    for (path, after, help) in &all {
        let rendered: Vec<&str> = help.lines().map(str::trim_end).collect();
        for line in after.lines().map(str::trim_end) {
            assert!(
                rendered.contains(&line),
                "`{path} --help` wraps this line at {WIDTH} columns:\n{line}"
            );
        }
        let examples = examples(help);
        assert!(
            examples.iter().any(|l| l.trim_start().starts_with("qexp ")),
            "`{path} --help` has no example:\n{help}"
        );
        for line in examples {
            if let Some(why) = broken(line) {
                panic!("`{path} --help`: the example line `{line}` {why}");
            }
        }
        insta::assert_snapshot!(format!("help_{}", path.replace(' ', "_")), help);
    }
}

#[test]
fn a_command_broken_across_lines_is_seen() {
    let help =
        "Examples:\n  qexp merge A B \\\n      --out C\n  qexp bench   # in\n  results/\nProse.";
    let found: Vec<_> = examples(help).into_iter().map(broken).collect();
    assert_eq!(
        found,
        [
            Some("continues on the next line"),
            Some("is the tail of a command broken across lines"),
            None,
            Some("is the tail of a command broken across lines"),
        ]
    );
    assert_eq!(broken("  AWS_REGION=x qexp upload A B"), None);
}

/// Where the CLI reference lives, from this crate.
const CLI_REFERENCE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/", "cli.md");

/// docs/cli.md as the command line renders it: every command's `--help`
/// at [`WIDTH`] columns, under a heading the README's table links to.
fn cli_reference() -> String {
    let mut cli = Cli::command().term_width(WIDTH);
    cli.build();
    let mut all = Vec::new();
    helps(&mut cli, "qexp", &mut all);
    let mut text = String::from(
        "# Command-line reference\n\n\
         Every command's `--help`, generated from the command line itself by\n\
         `QEXP_WRITE_CLI_REFERENCE=1 cargo test --workspace --test suite -- help::`;\n\
         a test fails when this file and `--help` differ. The README's Commands\n\
         table says in one line what each command is for.\n",
    );
    for (path, _, help) in &all {
        let help: Vec<&str> = help.lines().map(str::trim_end).collect();
        text.push_str(&format!(
            "\n## {path}\n\n```text\n{}\n```\n",
            help.join("\n")
        ));
    }
    text
}

#[test]
fn the_cli_reference_is_every_commands_help() {
    let generated = cli_reference();
    if std::env::var_os("QEXP_WRITE_CLI_REFERENCE").is_some() {
        std::fs::write(CLI_REFERENCE, &generated).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(CLI_REFERENCE).unwrap_or_default();
    assert!(
        committed == generated,
        "docs/cli.md differs from --help: regenerate it with \
         QEXP_WRITE_CLI_REFERENCE=1 cargo test --workspace --test suite -- help::"
    );
}

#[test]
fn sim_help_says_what_every_profile_is() {
    let mut cli = Cli::command().term_width(WIDTH);
    cli.build();
    let sim = cli
        .find_subcommand_mut("sim")
        .expect("qexp sim")
        .render_long_help()
        .to_string();
    for name in qexp_sim::SimProfile::names() {
        let about = qexp_sim::SimProfile::about(name).expect("every built-in profile has a phrase");
        assert!(
            sim.lines()
                .any(|l| l.trim_start().starts_with(name) && l.ends_with(about)),
            "`qexp sim --help` does not say what `{name}` is"
        );
    }
}
