//! `[accuracy]`: graded items sent inside the measured load. At every point
//! the first `per_point` measured requests of each trial (at most half of
//! its measured requests) send an item's
//! prompt instead of filler; their answers are graded when they finish and
//! kept apart from the point's timing statistics (they load the server like
//! the others). Each trial gets its own items, the same for every point and
//! deployment of the trial, so that a deployment is compared with another
//! (or a load with another) on the same items.

use crate::grade::{arithmetic, read_jsonl, GradeError, Grader, Item};
use serde::Deserialize;
use std::path::Path;
use toml::Spanned;

/// The name of the built-in set in `accuracy.items`.
pub const ARITHMETIC: &str = "arithmetic";

/// `[accuracy]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccuracySection {
    /// `"arithmetic"` (qexp's seeded set), or a JSONL file of items,
    /// relative to the plan's folder unless absolute.
    pub items: Spanned<String>,
    /// Graded requests per (trial, point): its first measured requests,
    /// at most half of them (the rest make the point's timing).
    #[serde(default = "default_per_point")]
    pub per_point: u32,
    /// The grader of a file's items that name none.
    #[serde(default = "default_grader")]
    pub grader: Grader,
    /// A file's items, read when the plan is loaded.
    #[serde(skip)]
    pub(crate) file_items: Vec<Item>,
}

fn default_per_point() -> u32 {
    20
}

fn default_grader() -> Grader {
    Grader::Number
}

impl AccuracySection {
    /// Whether the items are qexp's built-in set.
    pub fn builtin(&self) -> bool {
        self.items.get_ref() == ARITHMETIC
    }

    /// Reads a file's items (`plan_dir` resolves a relative path).
    pub(crate) fn load(&mut self, plan_dir: &Path) -> Result<(), GradeError> {
        if !self.builtin() {
            self.file_items = read_jsonl(&plan_dir.join(self.items.get_ref()), self.grader)?;
        }
        Ok(())
    }

    /// The items of `trial` (from 1) under the run's `seed`: `per_point`
    /// of them, none shared with another trial while the set lasts (a
    /// file's items are taken in order, round and round).
    pub fn items_of(&self, trial: u32, seed: u64) -> Vec<Item> {
        let k = self.per_point as usize;
        let first = (trial.max(1) as usize - 1) * k;
        if self.builtin() {
            // A shorter set is a prefix of a longer one: trial t's items
            // are the t-th block of per_point.
            return arithmetic(first + k, seed).split_off(first);
        }
        let n = self.file_items.len();
        if n == 0 {
            return Vec::new();
        }
        (first..first + k)
            .map(|i| self.file_items[i % n].clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(items: &str, per_point: u32) -> AccuracySection {
        AccuracySection {
            items: Spanned::new(0..0, items.to_string()),
            per_point,
            grader: Grader::Number,
            file_items: Vec::new(),
        }
    }

    #[test]
    fn each_trial_gets_its_own_arithmetic_items() {
        let s = section(ARITHMETIC, 5);
        let (t1, t2) = (s.items_of(1, 7), s.items_of(2, 7));
        assert_eq!((t1.len(), t2.len()), (5, 5));
        assert_eq!(t1, arithmetic(5, 7));
        assert_eq!(t2, arithmetic(10, 7)[5..]);
        assert!(t1.iter().all(|i| !t2.contains(i)));
        assert_eq!(
            s.items_of(1, 7),
            t1,
            "the same for every point and deployment"
        );
    }

    #[test]
    fn a_files_items_go_round() {
        let dir = tempfile::tempdir().unwrap();
        let lines =
            "{\"prompt\": \"a?\", \"answer\": \"1\"}\n{\"prompt\": \"b?\", \"answer\": \"2\"}\n\
                     {\"prompt\": \"c?\", \"answer\": \"3\"}\n";
        std::fs::write(dir.path().join("items.jsonl"), lines).unwrap();
        let mut s = section("items.jsonl", 2);
        s.load(dir.path()).unwrap();
        let prompts =
            |t| -> Vec<String> { s.items_of(t, 0).into_iter().map(|i| i.prompt).collect() };
        assert_eq!(prompts(1), ["a?", "b?"]);
        assert_eq!(prompts(2), ["c?", "a?"]);
    }
}
