//! The Parquet row layouts, each column declared once: a field of
//! [`RequestRow`] or [`PointRow`] below is a column of `requests.parquet` or
//! `points.parquet` (declaration order is column order on disk), and its
//! name is a constant in [`requests`] or [`points`] that readers use instead
//! of a string. docs/results.md "Results layout" documents every column.
//!
//! To add a column: add one line to a row below (its constant comes with
//! it), fill it where the runner makes rows (qexp-runner `record.rs`), and
//! read it through its constant. Server counters are declared in
//! qexp-client's [`ServerCounter`] list and need no line here.

use polars::prelude::*;
use qexp_types::{ErrorClass, ServerCounter, ServerCounters};
use serde::{Deserialize, Serialize};

/// A field type that becomes one or more columns of a frame.
pub(crate) trait Columns: Sized {
    /// The columns holding `values`, the field stored under `name`.
    fn columns<'a>(
        name: &'static str,
        values: impl Iterator<Item = &'a Self> + Clone,
    ) -> Vec<Column>
    where
        Self: 'a;
}

/// `Columns` for types stored as one plain column, converted by `$f`.
macro_rules! plain_columns {
    ($($t:ty => $f:expr;)*) => {$(
        impl Columns for $t {
            fn columns<'a>(
                name: &'static str,
                values: impl Iterator<Item = &'a Self> + Clone,
            ) -> Vec<Column>
            where
                Self: 'a,
            {
                vec![Column::new(name.into(), values.map($f).collect::<Vec<_>>())]
            }
        }
    )*};
}

plain_columns! {
    String => |v: &String| v.as_str();
    bool => |v: &bool| *v;
    u32 => |v: &u32| *v;
    u64 => |v: &u64| *v;
    f64 => |v: &f64| *v;
    Option<f64> => |v: &Option<f64>| *v;
    Option<u32> => |v: &Option<u32>| *v;
    Option<u64> => |v: &Option<u64>| *v;
    Option<bool> => |v: &Option<bool>| *v;
    Option<u16> => |v: &Option<u16>| v.map(u32::from);
    Option<String> => |v: &Option<String>| v.as_deref();
    Option<ErrorClass> => |v: &Option<ErrorClass>| v.map(ErrorClass::as_str);
}

impl Columns for Vec<f64> {
    fn columns<'a>(
        name: &'static str,
        values: impl Iterator<Item = &'a Self> + Clone,
    ) -> Vec<Column> {
        let lists: Vec<Series> = values
            .map(|v| Series::new(PlSmallStr::EMPTY, v.as_slice()))
            .collect();
        let series = if lists.is_empty() {
            Series::new_empty(name.into(), &DataType::List(Box::new(DataType::Float64)))
        } else {
            Series::new(name.into(), lists)
        };
        vec![series.into()]
    }
}

impl Columns for Option<ServerCounters> {
    fn columns<'a>(
        name: &'static str,
        values: impl Iterator<Item = &'a Self> + Clone,
    ) -> Vec<Column> {
        let mut out: Vec<Column> = ServerCounter::ALL
            .into_iter()
            .map(|c| {
                let v = values.clone().map(|s| s.as_ref().and_then(|s| s.get(c)));
                Column::new(server_column_in(name, c).into(), v.collect::<Vec<_>>())
            })
            .collect();
        let acceptance = values
            .clone()
            .map(|s| s.as_ref().and_then(ServerCounters::acceptance_length));
        out.push(Column::new(
            points::SERVER_SPEC_ACCEPTANCE_LENGTH.into(),
            acceptance.collect::<Vec<_>>(),
        ));
        let json = values.map(|s| s.as_ref().map(ServerCounters::raw_json));
        out.push(Column::new(
            points::SERVER_COUNTERS_JSON.into(),
            json.collect::<Vec<_>>(),
        ));
        out
    }
}

fn server_column_in(prefix: &str, c: ServerCounter) -> String {
    format!("{prefix}_{}", c.name())
}

/// The `points.parquet` column of a server counter: `server_<name>`.
pub fn server_column(c: ServerCounter) -> String {
    server_column_in(points::SERVER, c)
}

/// Declares a row struct, the constants naming its columns, and its frame.
macro_rules! stored_row {
    (
        $(#[$meta:meta])*
        pub struct $row:ident, columns in $module:ident {
            $( $(#[$doc:meta])* $konst:ident $field:ident : $ty:ty, )*
        }
        $(#[$mdoc:meta])*
        extra { $( $(#[$xdoc:meta])* $xkonst:ident = $xname:literal; )* }
    ) => {
        $(#[$meta])*
        pub struct $row {
            $( $(#[$doc])* pub $field: $ty, )*
        }

        $(#[$mdoc])*
        pub mod $module {
            $( $(#[$doc])* pub const $konst: &str = stringify!($field); )*
            $( $(#[$xdoc])* pub const $xkonst: &str = $xname; )*
        }

        impl $row {
            /// These rows as a frame: the columns of each field, in declaration order.
            pub fn frame(rows: &[$row]) -> PolarsResult<DataFrame> {
                let mut columns: Vec<Column> = Vec::new();
                $( columns.extend(<$ty as Columns>::columns(
                    $module::$konst,
                    rows.iter().map(|r| &r.$field),
                )); )*
                DataFrame::new(rows.len(), columns)
            }
        }
    };
}

stored_row! {
    /// One request: a row of `requests.parquet`. A journal line written
    /// before a column existed reads it as its default.
    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
    #[serde(default)]
    pub struct RequestRow, columns in requests {
        /// Run id.
        RUN_ID run_id: String,
        /// Client host name (runs from several machines can be merged).
        CLIENT_HOST client_host: String,
        /// Trial number, from 1.
        TRIAL trial: u32,
        /// Point id (plan order).
        POINT_ID point_id: u32,
        /// Position of the point within its trial, from 0.
        POINT_ORDER point_order: u32,
        /// Index of the request within the point (warmups first).
        REQUEST_INDEX request_index: u32,
        /// True for warmup requests, which statistics ignore.
        WARMUP warmup: bool,
        /// Point parameter: requests in flight.
        CONCURRENCY concurrency: u32,
        /// Point parameter: planned prompt tokens.
        INPUT_TOKENS_TARGET input_tokens_target: u32,
        /// Point parameter: planned output tokens.
        OUTPUT_TOKENS_TARGET output_tokens_target: u32,
        /// This request's planned prompt tokens (the point's, unless lengths vary).
        INPUT_TOKENS_PLANNED input_tokens_planned: u32,
        /// This request's `max_tokens` (the point's, unless lengths vary).
        OUTPUT_TOKENS_PLANNED output_tokens_planned: u32,
        /// Prompt tokens the plan expects the server to find cached (a shared prefix after its group's first prompt).
        CACHED_TOKENS_EXPECTED cached_tokens_expected: u32,
        /// Shared-prefix group of the prompt, null when it shares no prefix.
        PREFIX_GROUP prefix_group: Option<u32>,
        /// Multi-turn: the conversation within the point (from 0), null otherwise.
        SESSION session: Option<u32>,
        /// Multi-turn: the turn within its conversation (from 1), null otherwise.
        TURN turn: Option<u32>,
        /// When the scheduler released the request, Unix seconds.
        SCHEDULED_UNIX_S scheduled_unix_s: f64,
        /// When it was sent, Unix seconds.
        SENT_UNIX_S sent_unix_s: f64,
        /// Sent − scheduled: time spent in qexp before sending.
        QUEUE_S queue_s: f64,
        /// Sent → response headers.
        HEADERS_S headers_s: Option<f64>,
        /// Sent → first content chunk (TTFT).
        TTFT_S ttft_s: Option<f64>,
        /// Sent → first chunk of reasoning text (reasoning models), null without reasoning.
        TTFT_REASONING_S ttft_reasoning_s: Option<f64>,
        /// Sent → first chunk of answer text (after any reasoning).
        TTFT_ANSWER_S ttft_answer_s: Option<f64>,
        /// Sent → last content chunk (E2E).
        E2E_S e2e_s: Option<f64>,
        /// (E2E − TTFT)/(output tokens − 1).
        TPOT_S tpot_s: Option<f64>,
        /// Sent → end of stream (or failure).
        END_S end_s: f64,
        /// Content chunks received (answer or reasoning).
        CHUNKS chunks: u32,
        /// Of those, chunks that carried reasoning text.
        REASONING_CHUNKS reasoning_chunks: u32,
        /// Mean gap between content chunks.
        ITL_MEAN_S itl_mean_s: Option<f64>,
        /// Largest gap between content chunks.
        ITL_MAX_S itl_max_s: Option<f64>,
        /// Arrival offsets of every content chunk (raw, for pooled ITL).
        CHUNK_OFFSETS_S chunk_offsets_s: Vec<f64>,
        /// `usage.prompt_tokens`.
        PROMPT_TOKENS prompt_tokens: Option<u32>,
        /// `usage.completion_tokens`.
        COMPLETION_TOKENS completion_tokens: Option<u32>,
        /// `usage.prompt_tokens_details.cached_tokens`.
        CACHED_TOKENS cached_tokens: Option<u32>,
        /// The client's count (content deltas).
        CLIENT_TOKENS client_tokens: u32,
        /// Characters of generated text.
        OUTPUT_CHARS output_chars: u64,
        /// Finish reason.
        FINISH_REASON finish_reason: Option<String>,
        /// HTTP status.
        HTTP_STATUS http_status: Option<u16>,
        /// Error class, stored as its stable snake_case name
        /// (`ErrorClass::as_str`); null when the request succeeded.
        ERROR_CLASS error_class: Option<ErrorClass>,
        /// Error message.
        ERROR_MESSAGE error_message: Option<String>,
        /// Times the request was sent again after its connection closed under it
        /// before any response byte (timing counts from the last send).
        RETRIES retries: u32,
        /// The `[[deployment]]` the request went to; null in a run without deployments.
        DEPLOYMENT deployment: Option<String>,
        /// SHA-256 of that deployment's definition (`DeploymentSpec::hash`).
        DEPLOYMENT_HASH deployment_hash: Option<String>,
        /// The server start that answered (`<deployment>-bBBBB` / `<deployment>-once`), for launched deployments.
        START_ID start_id: Option<String>,
        /// The shard that sent the request (`qexp run --shard K/N`); null in a run made by one process.
        SHARD shard: Option<u32>,
        /// XXH3-64 of the answer's text (reasoning apart); null when no
        /// response came. docs/results.md "Answer health" has this and the
        /// columns below.
        ANSWER_HASH answer_hash: Option<u64>,
        /// XXH3-64 of the reasoning text; null when none came.
        REASONING_HASH reasoning_hash: Option<u64>,
        /// Characters of the answer (reasoning apart).
        ANSWER_CHARS answer_chars: Option<u64>,
        /// Of those, characters that are not whitespace.
        ANSWER_NONBLANK_CHARS answer_nonblank_chars: Option<u64>,
        /// Of those, U+FFFD replacement characters.
        ANSWER_REPLACEMENT_CHARS answer_replacement_chars: Option<u64>,
        /// Words in the stretch that repeats at the answer's end (0: none).
        REPEAT_PERIOD_WORDS repeat_period_words: Option<u32>,
        /// Words at the answer's end that repeat it, its first occurrence included.
        REPEAT_WORDS repeat_words: Option<u32>,
        /// Characters those words span, to the answer's end.
        REPEAT_CHARS repeat_chars: Option<u64>,
        /// Whether the plan forced the answer's length (`ignore_eos`, or `min_tokens` at `max_tokens`).
        LENGTH_FORCED length_forced: bool,
        /// The answer's text, for a sample of answers and for unhealthy ones
        /// (`[run] keep_answers`); null when not kept.
        ANSWER_TEXT answer_text: Option<String>,
        /// The graded item the request asked (`[accuracy]`); null for the
        /// point's other requests, which alone make its timing statistics.
        ITEM_ID item_id: Option<String>,
        /// Whether the graded answer was right; null when not graded or failed.
        CORRECT correct: Option<bool>,
        /// Whether the answer parsed (`[workload.tools]`,
        /// `[workload.response_format]`): its tool calls' arguments are JSON
        /// matching their tools' schemas, or its text is JSON matching the
        /// response schema; null when the plan asks nothing of the answer's
        /// form or the request failed.
        PARSED parsed: Option<bool>,
        /// Sent → first chunk of a tool call (its name or arguments); null without one.
        TTFT_TOOL_S ttft_tool_s: Option<f64>,
        /// Tool calls the answer made.
        TOOL_CALLS tool_calls: u32,
        /// The request's class (`[[workload.class]]`); null in a workload without classes.
        CLASS class: Option<String>,
        /// Images sent in the user message (`[workload.images]`); null in a plan without images.
        IMAGES images: Option<u32>,
        /// Their pixels, all images together; null without images.
        IMAGE_PIXELS image_pixels: Option<u64>,
        /// Their encoded bytes (before base64), all images together; null without images.
        IMAGE_BYTES image_bytes: Option<u64>,
    }

    /// Column names of `requests.parquet`.
    extra {}
}

stored_row! {
    /// One (trial, point): a row of `points.parquet`.
    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
    pub struct PointRow, columns in points {
        /// Run id.
        RUN_ID run_id: String,
        /// Trial number, from 1.
        TRIAL trial: u32,
        /// Point id.
        POINT_ID point_id: u32,
        /// Position within the trial.
        POINT_ORDER point_order: u32,
        /// Requests in flight.
        CONCURRENCY concurrency: u32,
        /// Planned prompt tokens.
        INPUT_TOKENS_TARGET input_tokens_target: u32,
        /// Planned output tokens.
        OUTPUT_TOKENS_TARGET output_tokens_target: u32,
        /// Measured requests planned.
        REQUESTS_PLANNED requests_planned: u32,
        /// Measured requests that finished (ok or failed).
        REQUESTS_DONE requests_done: u32,
        /// Measured requests that failed.
        FAILURES failures: u32,
        /// First measured send, Unix seconds.
        WINDOW_START_UNIX_S window_start_unix_s: f64,
        /// Last measured completion, Unix seconds.
        WINDOW_END_UNIX_S window_end_unix_s: f64,
        /// Output tokens of all measured successful requests.
        OUTPUT_TOKENS output_tokens: u64,
        /// output_tokens / (window_end − window_start).
        AGG_OUTPUT_TOK_S agg_output_tok_s: Option<f64>,
        /// Largest scheduled → sent lag (load-generator health).
        SEND_LAG_MAX_S send_lag_max_s: f64,
        /// qexp's CPU seconds per wall second while the point ran (load-generator health).
        CLIENT_CPU_CORES client_cpu_cores: Option<f64>,
        /// p99 of how late qexp's event loop woke a due timer while the point
        /// ran, s (load-generator health: arrivals are stamped that late too).
        CLIENT_LOOP_LAG_P99_S client_loop_lag_p99_s: Option<f64>,
        /// Filler words per prompt after calibration.
        PROMPT_UNITS prompt_units: u32,
        /// Why the point's numbers are not valid (e.g. prompt length off), if so.
        INVALID_REASON invalid_reason: Option<String>,
        /// Server counters over the measured requests (after − before scrapes of
        /// its Prometheus metrics), `None` when no metrics were scraped. Stored
        /// as one column per `ServerCounter` (`server_<name>`, see
        /// `server_column`), then `server_spec_acceptance_length` and
        /// `server_counters_json`.
        SERVER server: Option<ServerCounters>,
        /// The `[[deployment]]` of the point; null in a run without deployments.
        DEPLOYMENT deployment: Option<String>,
        /// SHA-256 of that deployment's definition.
        DEPLOYMENT_HASH deployment_hash: Option<String>,
        /// The server start that answered, for launched deployments.
        START_ID start_id: Option<String>,
        /// GPUs measured for power (`[power]`); null without power.
        GPUS gpus: Option<u32>,
        /// Energy of those GPUs over the window, J: the counters' change where
        /// every GPU has a counter, else the integrated power; null when not
        /// measured or not trusted (`energy_invalid_reason`).
        ENERGY_J energy_j: Option<f64>,
        /// The energy counters' change over the window, J (kept when invalid).
        ENERGY_COUNTER_J energy_counter_j: Option<f64>,
        /// The power samples integrated over the window (trapezoids, edges interpolated), J.
        ENERGY_INTEGRATED_J energy_integrated_j: Option<f64>,
        /// Mean power of the GPUs together over the window, W.
        POWER_AVG_W power_avg_w: Option<f64>,
        /// Sum of each GPU's highest sampled power in the window, W.
        POWER_PEAK_W power_peak_w: Option<f64>,
        /// Why the window's energy is not trusted (a gap, a counter reset, a vanished GPU, …).
        ENERGY_INVALID_REASON energy_invalid_reason: Option<String>,
        /// A remark on the energy that does not invalidate it (counter and integral disagree by over 5%).
        ENERGY_NOTE energy_note: Option<String>,
        /// Largest share of the window any GPU was held back by its power limit (0–1).
        GPU_POWER_CAPPED_SHARE gpu_power_capped_share: Option<f64>,
        /// Largest share of the window any GPU was held back by temperature (0–1).
        GPU_THERMAL_SHARE gpu_thermal_share: Option<f64>,
        /// Lowest SM clock any GPU had in the window, MHz.
        GPU_SM_CLOCK_MIN_MHZ gpu_sm_clock_min_mhz: Option<f64>,
        /// Highest SM clock any GPU had in the window, MHz.
        GPU_SM_CLOCK_MAX_MHZ gpu_sm_clock_max_mhz: Option<f64>,
        /// The XID error a GPU reported during the window (the point is then invalid).
        GPU_XID gpu_xid: Option<f64>,
        /// Each GPU's figures over the window as JSON.
        ENERGY_GPUS_JSON energy_gpus_json: Option<String>,
    }

    /// Column names of `points.parquet`.
    extra {
        /// Server counters: 1 + accepted / drafts of speculative decoding, where drafts were made.
        SERVER_SPEC_ACCEPTANCE_LENGTH = "server_spec_acceptance_length";
        /// Server counters: every counter's delta as a JSON object (`{"name{labels}": delta}`).
        SERVER_COUNTERS_JSON = "server_counters_json";
    }
}

/// `requests.parquet` layout for these rows.
pub fn requests_frame(rows: &[RequestRow]) -> PolarsResult<DataFrame> {
    RequestRow::frame(rows)
}

/// `points.parquet` layout for these rows.
pub fn points_frame(rows: &[PointRow]) -> PolarsResult<DataFrame> {
    PointRow::frame(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(df: PolarsResult<DataFrame>) -> Vec<String> {
        df.map(|df| {
            df.get_column_names()
                .iter()
                .map(|n| n.to_string())
                .collect()
        })
        .unwrap_or_default()
    }

    /// The on-disk layout: recorded runs have these columns in this order.
    /// Adding a column appends to a list here; renaming one breaks old runs.
    #[test]
    fn column_layout_is_pinned() {
        let req = names(requests_frame(&[RequestRow::default()]));
        assert_eq!(
            req.join(","),
            "run_id,client_host,trial,point_id,point_order,request_index,warmup,concurrency,\
             input_tokens_target,output_tokens_target,input_tokens_planned,output_tokens_planned,\
             cached_tokens_expected,prefix_group,session,turn,scheduled_unix_s,sent_unix_s,queue_s,\
             headers_s,ttft_s,ttft_reasoning_s,ttft_answer_s,e2e_s,tpot_s,end_s,chunks,\
             reasoning_chunks,itl_mean_s,itl_max_s,chunk_offsets_s,\
             prompt_tokens,completion_tokens,cached_tokens,client_tokens,output_chars,\
             finish_reason,http_status,error_class,error_message,retries,deployment,\
             deployment_hash,start_id,shard,answer_hash,reasoning_hash,answer_chars,\
             answer_nonblank_chars,answer_replacement_chars,repeat_period_words,repeat_words,\
             repeat_chars,length_forced,answer_text,item_id,correct,parsed,ttft_tool_s,tool_calls,class,\
             images,image_pixels,image_bytes"
        );
        assert_eq!(
            names(requests_frame(&[])),
            req,
            "empty frames keep the layout"
        );
        let pts = names(points_frame(&[PointRow::default()]));
        assert_eq!(
            pts.join(","),
            "run_id,trial,point_id,point_order,concurrency,input_tokens_target,\
             output_tokens_target,requests_planned,requests_done,failures,window_start_unix_s,\
             window_end_unix_s,output_tokens,agg_output_tok_s,send_lag_max_s,client_cpu_cores,\
             client_loop_lag_p99_s,prompt_units,invalid_reason,server_prefix_cache_queries,server_prefix_cache_hits,\
             server_cached_prompt_tokens,server_preemptions,server_ttft_count,server_ttft_sum_s,\
             server_spec_drafts,server_spec_accepted_tokens,server_spec_acceptance_length,\
             server_counters_json,deployment,deployment_hash,start_id,gpus,energy_j,\
             energy_counter_j,energy_integrated_j,power_avg_w,power_peak_w,energy_invalid_reason,\
             energy_note,gpu_power_capped_share,gpu_thermal_share,gpu_sm_clock_min_mhz,\
             gpu_sm_clock_max_mhz,gpu_xid,energy_gpus_json"
        );
        assert_eq!(names(points_frame(&[])), pts);
        assert_eq!(requests::ERROR_CLASS, "error_class");
        assert_eq!(server_column(ServerCounter::TtftSumS), "server_ttft_sum_s");
    }

    #[test]
    fn error_class_and_counters_are_stored_as_their_names() {
        let row = RequestRow {
            error_class: Some(ErrorClass::StreamBroken),
            ..RequestRow::default()
        };
        let df = requests_frame(&[row]).map_err(|e| e.to_string());
        let class = df.and_then(|df| {
            df.column(requests::ERROR_CLASS)
                .and_then(|c| c.str().map(|s| s.get(0).map(str::to_string)))
                .map_err(|e| e.to_string())
        });
        assert_eq!(class, Ok(Some("stream_broken".to_string())));

        let mut server = ServerCounters::default();
        server.values.insert(ServerCounter::SpecDrafts, 2.0);
        server.values.insert(ServerCounter::SpecAcceptedTokens, 4.0);
        let rows = [
            PointRow {
                server: Some(server),
                ..PointRow::default()
            },
            PointRow::default(),
        ];
        let df = points_frame(&rows).map_err(|e| e.to_string());
        let get = |name: &str| -> Result<Vec<Option<f64>>, String> {
            let df = df.as_ref().map_err(Clone::clone)?;
            let c = df.column(name).map_err(|e| e.to_string())?;
            Ok(c.f64().map_err(|e| e.to_string())?.iter().collect())
        };
        assert_eq!(
            get(&server_column(ServerCounter::SpecDrafts)),
            Ok(vec![Some(2.0), None])
        );
        assert_eq!(
            get(&server_column(ServerCounter::Preemptions)),
            Ok(vec![None, None])
        );
        assert_eq!(
            get(points::SERVER_SPEC_ACCEPTANCE_LENGTH),
            Ok(vec![Some(3.0), None])
        );
    }
}
