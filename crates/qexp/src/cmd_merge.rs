//! `qexp merge`: a sharded run's shards merged into one run.

use crate::{CliError, MergeArgs};
use qexp_merge::{MergeError, MergeOptions};

/// `qexp merge`: exit 0 when merged, 2 when refused. Shards given as
/// URLs are downloaded first.
pub(crate) async fn merge(args: MergeArgs) -> Result<u8, CliError> {
    let cache = args.cache.clone().unwrap_or_else(|| {
        args.out
            .parent()
            .map_or_else(|| ".".into(), std::path::Path::to_path_buf)
    });
    let opts = MergeOptions {
        shards: crate::cmd_objstore::local_shards(&args.shards, &cache).await?,
        out: args.out,
        partial: args.partial,
        piece_rows: qexp_merge::MERGE_PIECE_ROWS,
    };
    let merged = qexp_merge::merge(&opts).map_err(|e| match e {
        MergeError::Missing(_)
        | MergeError::NoneComplete
        | MergeError::NoShards
        | MergeError::NotAShard(_)
        | MergeError::GivenTwice { .. }
        | MergeError::NotOneRun { .. }
        | MergeError::Plan(_)
        | MergeError::Store(
            qexp_store::StoreError::NotARun { .. }
            | qexp_store::StoreError::NewerSchema { .. }
            | qexp_store::StoreError::Manifest { .. }
            | qexp_store::StoreError::RunExists { .. },
        ) => CliError::input(e),
        other => CliError::failure(other),
    })?;
    let record = merged.manifest.merged.as_ref();
    println!(
        "merged {} of {} shards of run {} ({} measured requests) into {}",
        record.map_or(0, |r| r.shards.len()),
        record.map_or(0, |r| r.count),
        merged.manifest.run_id,
        merged.requests,
        merged.dir.display()
    );
    for line in &merged.missing {
        println!("partial: {line}");
    }
    for line in record.map(|r| r.out_of_step_notes()).unwrap_or_default() {
        eprintln!("qexp merge: warning: {line}");
    }
    Ok(0)
}
