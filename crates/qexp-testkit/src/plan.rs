//! A plan under construction, for tests whose point is not the TOML text.
//!
//! The keys every plan needs are set once here, so a new required key
//! breaks this builder and not the tests; a test names only what it is
//! about. Tests about parsing, spans or error messages keep their TOML
//! inline: there the text is the point.

use qexp_plan::{ApiKind, Plan};
use std::path::{Path, PathBuf};
use toml::{Table, Value};

/// A plan as TOML: experiment `name` (version 1) with a 100-token prompt
/// and 20 output tokens, then whatever a test sets.
#[derive(Debug, Clone)]
pub struct PlanFixture {
    name: String,
    table: Table,
    tail: String,
}

impl PlanFixture {
    /// Experiment `name`, version 1, `input_tokens = 100`, `output_tokens = 20`.
    pub fn new(name: &str) -> PlanFixture {
        PlanFixture {
            name: name.to_owned(),
            table: Table::new(),
            tail: String::new(),
        }
        .set("experiment.name", name)
        .set("experiment.version", 1)
        .input(100)
        .output(20)
    }

    /// `target.base_url`: `sim:<profile>` or a server's URL.
    pub fn target(self, base_url: &str) -> PlanFixture {
        self.set("target.base_url", base_url)
    }

    /// `target.api`.
    pub fn api(self, api: ApiKind) -> PlanFixture {
        self.set("target.api", api.as_str())
    }

    /// `target.extra_body.ignore_eos = true`: every request runs to its output length.
    pub fn ignore_eos(self) -> PlanFixture {
        self.set("target.extra_body.ignore_eos", true)
    }

    /// `workload.input_tokens`.
    pub fn input(self, tokens: u32) -> PlanFixture {
        self.set("workload.input_tokens", tokens)
    }

    /// `workload.output_tokens`.
    pub fn output(self, tokens: u32) -> PlanFixture {
        self.set("workload.output_tokens", tokens)
    }

    /// `sweep.concurrency`.
    pub fn concurrency(self, levels: &[u32]) -> PlanFixture {
        self.set("sweep.concurrency", levels.to_vec())
    }

    /// `run.requests`: a count (`12`) or a multiple of the concurrency (`"2x"`).
    pub fn requests(self, requests: impl Into<Value>) -> PlanFixture {
        self.set("run.requests", requests)
    }

    /// `run.warmup_requests`.
    pub fn warmup(self, requests: u32) -> PlanFixture {
        self.set("run.warmup_requests", requests)
    }

    /// `run.trials`.
    pub fn trials(self, trials: u32) -> PlanFixture {
        self.set("run.trials", trials)
    }

    /// `run.seed`.
    pub fn seed(self, seed: u32) -> PlanFixture {
        self.set("run.seed", seed)
    }

    /// Any key, by its dotted path (`"workload.shared_prefix.groups"`);
    /// the tables on the way are made as needed.
    pub fn set(mut self, path: &str, value: impl Into<Value>) -> PlanFixture {
        let mut keys: Vec<&str> = path.split('.').collect();
        let last = keys.pop().unwrap_or_default();
        let mut at = &mut self.table;
        for k in keys {
            let next = at.entry(k).or_insert_with(|| Value::Table(Table::new()));
            at = match next {
                Value::Table(t) => t,
                other => panic!("`{path}`: `{k}` is already {other}, not a table"),
            };
        }
        at.insert(last.to_owned(), value.into());
        self
    }

    /// TOML text written after the keys, for what reads best as text
    /// (`[[deployment]]` tables, say).
    pub fn raw(mut self, text: &str) -> PlanFixture {
        self.tail.push('\n');
        self.tail.push_str(text);
        self
    }

    /// The plan's text.
    pub fn toml(&self) -> String {
        format!("{}{}", self.table, self.tail)
    }

    /// Writes the plan to `<dir>/<name>.toml` and returns that path.
    pub fn write(&self, dir: &Path) -> PathBuf {
        let path = dir.join(format!("{}.toml", self.name));
        std::fs::write(&path, self.toml())
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        path
    }

    /// The plan parsed in memory, as if read from `<name>.toml`.
    pub fn parse(&self) -> Plan {
        let path = PathBuf::from(format!("{}.toml", self.name));
        Plan::parse(&path, &self.toml())
            .unwrap_or_else(|e| panic!("the fixture plan does not parse: {e}"))
    }

    /// Writes the plan (as [`PlanFixture::write`]) and loads it as qexp does.
    pub fn load(&self, dir: &Path) -> Plan {
        let path = self.write(dir);
        Plan::load(&path).unwrap_or_else(|e| panic!("the fixture plan does not load: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builder_sets_what_it_says_and_keeps_the_required_keys() {
        let plan = PlanFixture::new("t")
            .target("sim:exact")
            .api(ApiKind::Chat)
            .ignore_eos()
            .input(200)
            .concurrency(&[1, 4])
            .warmup(0)
            .trials(3)
            .seed(7)
            .set("workload.shared_prefix.groups", 2)
            .set("workload.shared_prefix.prompts_per_group", 3)
            .set("workload.shared_prefix.system_tokens", 100);
        let text = plan.toml();
        let table: Table = text.parse().unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(table["experiment"]["name"].as_str(), Some("t"));
        assert_eq!(
            table["target"]["extra_body"]["ignore_eos"].as_bool(),
            Some(true)
        );
        assert_eq!(
            table["workload"]["shared_prefix"]["groups"].as_integer(),
            Some(2)
        );
        let p = plan.parse();
        assert_eq!(p.file.experiment.name.get_ref(), "t");
        assert_eq!(p.file.target.api, ApiKind::Chat);
        assert_eq!(*p.file.workload.input_tokens.get_ref(), 200);
        assert_eq!(*p.file.workload.output_tokens.get_ref(), 20);
        assert_eq!(
            (
                p.file.run.trials,
                p.file.run.seed,
                p.file.run.warmup_requests
            ),
            (3, 7, 0)
        );
        // Two concurrency levels, one input length.
        assert_eq!(p.points().len(), 2);
        let counted = PlanFixture::new("r")
            .target("sim:exact")
            .requests("2x")
            .parse();
        assert_eq!(
            counted.file.run.requests(),
            qexp_plan::Requests::PerConcurrency(2)
        );
        let counted = PlanFixture::new("r")
            .target("sim:exact")
            .requests(12)
            .parse();
        assert_eq!(counted.file.run.requests(), qexp_plan::Requests::Count(12));
    }

    #[test]
    fn raw_text_follows_the_keys() {
        let plan = PlanFixture::new("d")
            .set("target.model", "m")
            .raw("[[deployment]]\nname = \"a\"\nbase_url = \"sim:exact\"\n");
        let p = plan.parse();
        assert_eq!(p.file.deployments.len(), 1);
    }
}
