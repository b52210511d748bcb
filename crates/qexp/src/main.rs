//! The `qexp` binary: parses the command line and hands it to the library
//! ([`qexp::main_with`]), where every subcommand lives.

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = qexp::Cli::parse();
    qexp::init_tracing();
    ExitCode::from(qexp::main_with(cli))
}
