//! `qexp export FORMAT RUN`: a run written in another tool's format.

use crate::CliError;
use std::path::PathBuf;

/// `qexp export`.
// Doc comments here are clap's help text, where `<run-id>` is the usual
// placeholder; rustdoc would read it as an unclosed HTML tag.
#[allow(rustdoc::invalid_html_tags)]
#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// The format: llmd (llm-d-benchmark's Benchmark Report, schema v0.2.1).
    #[arg(value_parser = clap::builder::PossibleValuesParser::new(["llmd"]))]
    pub format: String,
    /// The run: a folder (results/<experiment>/<run-id>) or a run id under --results.
    pub run: PathBuf,
    /// Where the reports go [default: reports/llmd/<run-id>/].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Where run ids are looked up.
    #[arg(long, default_value = "results")]
    pub results: PathBuf,
}

/// `qexp export`: writes one report per (trial, point) and names each file.
pub(crate) fn export(args: ExportArgs) -> Result<u8, CliError> {
    let dir = qexp_store::resolve_run(&args.run, &args.results).map_err(CliError::input)?;
    let out = match args.out {
        Some(out) => out,
        None => {
            let m = qexp_store::read_manifest(&dir).map_err(CliError::input)?;
            PathBuf::from("reports").join("llmd").join(m.folder_name())
        }
    };
    let files = qexp_import::llmd::export(&dir, &out).map_err(CliError::failure)?;
    for f in &files {
        println!("llmd: {}", f.display());
    }
    Ok(0)
}
