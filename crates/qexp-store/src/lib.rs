//! qexp-store owns the results directory: the manifest, the Parquet schemas
//! of `requests.parquet` and `points.parquet`, incremental writing (one part
//! file per finished (trial, point), merged at the end), and reading runs
//! back. It computes no statistics: that is qexp-analysis.

mod error;
mod manifest;
mod reader;
mod rows;
mod writer;

pub use error::StoreError;
pub use manifest::{Comparability, Manifest, RunStatus, TargetInfo, MANIFEST_FILE, SCHEMA_VERSION};
pub use reader::{
    find_runs, for_each_request_batch, latest_runs, read_manifest, scan_points, scan_requests,
    RunRef,
};
pub use rows::{points_frame, requests_frame, PointRow, RequestRow, ServerDeltas};
pub use writer::{new_run_id, RunWriter};
