use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = qexp::Cli::parse();
    qexp::init_tracing();
    ExitCode::from(qexp::main_with(cli))
}
