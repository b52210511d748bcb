//! Prints the measured power and false-alarm rates of `qexp diff`'s decision
//! rule, for the table of docs/comparing.md:
//!
//! ```text
//! cargo run --release -p qexp-analysis --example diff_power [DIFFS]
//! ```
//!
//! Each cell simulates whole diff tables (4 points × 6 metrics, realistic
//! trial distributions: see `qexp_analysis::diff::power`) with a fixed seed:
//! DIFFS A/A diffs per row (default 1000) and DIFFS / 2 diffs per effect.

// Examples may panic: the ban on `unwrap` and `expect` (root Cargo.toml,
// [workspace.lints]) is for the code qexp ships.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use qexp_analysis::diff::power::{simulate, Scenario, POINTS};

const TRIALS: [usize; 4] = [2, 3, 5, 10];
const EFFECTS: [f64; 4] = [0.02, 0.05, 0.10, 0.20];
const ALPHA: f64 = 0.05;
const MIN_CHANGE: f64 = 0.02;

fn pct(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}

fn main() {
    let diffs: usize = match std::env::args().nth(1).map(|a| a.parse()) {
        None => 1000,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            eprintln!("usage: diff_power [DIFFS > 0]");
            std::process::exit(2);
        }
    };
    for outlier in [false, true] {
        println!(
            "\n{} — α = {ALPHA}, threshold {}; {diffs} A/A diffs and {} diffs per effect ({} decode comparisons)\n",
            if outlier {
                "With one outlier trial (15% slower) per diff"
            } else {
                "Without outlier trials"
            },
            pct(MIN_CHANGE),
            diffs / 2,
            diffs / 2 * POINTS,
        );
        println!("| trials per side | A/A: diffs with any better/worse | A/A: comparisons called `=` | power at 2% | 5% | 10% | 20% |");
        println!("|---|--:|--:|--:|--:|--:|--:|");
        for (i, &trials) in TRIALS.iter().enumerate() {
            let seed = 1000 * i as u64 + u64::from(outlier);
            let aa = simulate(
                Scenario {
                    trials,
                    effect: 0.0,
                    outlier,
                },
                diffs,
                ALPHA,
                MIN_CHANGE,
                seed,
            );
            let mut row = format!(
                "| {trials} | {} ({}) | {} |",
                pct(aa.false_alarm_rate()),
                aa.false_alarm_diffs,
                pct(aa.equivalent_rate())
            );
            for (j, &effect) in EFFECTS.iter().enumerate() {
                let r = simulate(
                    Scenario {
                        trials,
                        effect,
                        outlier,
                    },
                    diffs / 2,
                    ALPHA,
                    MIN_CHANGE,
                    seed + 10 * (j as u64 + 1),
                );
                row.push_str(&format!(" {} |", pct(r.power())));
                if r.reversed > 0 {
                    row.pop();
                    row.push_str(&format!("({} reversed) |", r.reversed));
                }
            }
            println!("{row}");
        }
    }
}
