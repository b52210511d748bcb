//! The README's "Commands" table against the command line itself: every
//! flag clap accepts (and shows in --help) is in the table, every flag the table names exists,
//! and every simulator profile is listed, so the table stays true.

use clap::CommandFactory;
use qexp::Cli;
use std::collections::BTreeSet;

/// The rows of README's "Commands" table, by subcommand name.
fn readme_rows() -> Vec<(String, String)> {
    let readme = include_str!("../../../README.md");
    let section = readme
        .split("\n## Commands\n")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .unwrap_or_default();
    section
        .lines()
        .filter_map(|l| l.strip_prefix("| `qexp "))
        .filter_map(|l| {
            let name = l.split_whitespace().next()?.trim_end_matches('`');
            Some((name.to_string(), l.to_string()))
        })
        .collect()
}

/// `--flag` words in a text.
fn flags_in(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .filter(|w| w.starts_with("--") && w.len() > 2)
        .map(str::to_string)
        .collect()
}

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
    for sub in cli.get_subcommands() {
        let clap_flags: BTreeSet<String> = sub
            .get_arguments()
            // Hidden flags are qexp's own plumbing, not the user's.
            .filter(|a| !a.is_hide_set())
            .filter_map(|a| a.get_long())
            .filter(|l| *l != "help")
            .map(|l| format!("--{l}"))
            .collect();
        let row = rows
            .iter()
            .find(|(n, _)| n == sub.get_name())
            .map(|(_, r)| r.as_str())
            .unwrap_or_default();
        // Only the command cell: the description may mention other commands' flags.
        let command_cell = row.split(" | ").next().unwrap_or_default();
        assert_eq!(
            flags_in(command_cell),
            clap_flags,
            "README's `qexp {}` row and its --help disagree",
            sub.get_name()
        );
    }
}

#[test]
fn readme_lists_every_simulator_profile() {
    let rows = readme_rows();
    let sim = rows
        .iter()
        .find(|(n, _)| n == "sim")
        .map(|(_, r)| r.as_str())
        .unwrap_or_default();
    for name in qexp_sim::SimProfile::names() {
        assert!(
            sim.contains(&format!("`{name}`")),
            "README's sim row misses the `{name}` profile"
        );
    }
}

#[test]
fn command_definition_is_consistent() {
    Cli::command().debug_assert();
}
