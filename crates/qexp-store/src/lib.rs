//! qexp-store owns the results directory: the manifest, the Parquet schemas
//! of `requests.parquet` and `points.parquet`, incremental writing (each
//! finished request to a journal at once, one part file per finished
//! (trial, point), merged at the end), reopening a run to resume it, and
//! reading runs back, crashed ones included. It computes no statistics:
//! that is qexp-analysis.

mod error;
mod import;
mod journal;
mod layout;
mod lock;
mod manifest;
mod overrides;
mod reader;
mod rows;
mod stamp;
mod writer;

pub use error::StoreError;
pub use import::{ImportRecord, MetricCheck, SourceFile};
pub use journal::Journal;
pub use layout::{copy_rank, transient_file};
pub use lock::RunLock;
pub use manifest::{
    shard_folder_name, Comparability, DeploymentFailure, DeploymentRun, DeploymentStart, LostShard,
    Manifest, MergeRecord, MergedShard, Resume, RunStatus, SaturationStop, ScheduleCell,
    ShardRecord, TargetInfo, MANIFEST_FILE, SCHEMA_VERSION, WENT_ON_ALONE,
};
pub use overrides::Overrides;
pub use reader::{
    find_runs, for_each_request_batch, latest_runs, read_manifest, resolve_run, scan_points,
    scan_requests, RequestIndex, RunRef,
};
pub use rows::{
    points, points_frame, requests, requests_frame, server_column, PointRow, RequestRow,
};
pub use stamp::folder_stamp;
pub use writer::{new_run_id, MergeWriter, RunWriter};
