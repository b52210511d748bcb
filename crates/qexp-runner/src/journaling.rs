//! Hands each finished request to the run's journal the moment it finishes;
//! the first write failure stops the run (no new sends) and is kept to be
//! reported.

use crate::record::{request_row, Context};
use crate::scheduler::Finished;
use crate::stop::Stop;
use crate::workload::Planned;
use qexp_client::ErrorClass;
use qexp_store::{RunWriter, StoreError};

/// Journals one (trial, point)'s finished requests.
pub(crate) struct Journaling<'a> {
    writer: &'a mut RunWriter,
    stop: &'a Stop,
    failure: Option<StoreError>,
}

impl<'a> Journaling<'a> {
    /// Journals into `writer`'s open journal; raises `stop` on a failure.
    pub(crate) fn new(writer: &'a mut RunWriter, stop: &'a Stop) -> Journaling<'a> {
        Journaling {
            writer,
            stop,
            failure: None,
        }
    }

    /// Appends `f` as a row; after a failure, only counts on the caller to stop.
    pub(crate) fn record(&mut self, ctx: &Context<'_>, f: &Finished, warmup: bool, plan: Planned) {
        if self.failure.is_some() {
            return;
        }
        if let Err(e) = self.writer.journal(&request_row(ctx, f, warmup, plan)) {
            self.failure = Some(e);
            self.stop.raise();
        }
    }

    /// The write failure, if one happened (waiting for the journal to hold
    /// every row handed to it).
    pub(crate) fn failure(self) -> Option<StoreError> {
        self.failure.or_else(|| self.writer.flush_journal().err())
    }
}

/// True when all `planned` requests ran to an end of their own (none was
/// left unsent or cut by an interrupt): the pair is complete.
pub(crate) fn all_finished(done: &[Finished], planned: u32) -> bool {
    let cut = |f: &&Finished| {
        f.outcome
            .error
            .as_ref()
            .is_some_and(|e| e.class == ErrorClass::Cancelled)
    };
    done.len() == planned as usize && !done.iter().any(|f| cut(&f))
}
