//! qexp's own overhead per start: time to ready minus the server's own time
//! from spawn to bind, for a fake server that is ready as soon as it binds.
//!
//! `cargo test -p qexp-deploy --test lifecycle overhead -- --nocapture`
//! prints the median and maximum over [`STARTS`] starts.

use std::time::Duration;

use qexp_deploy::launch;

use crate::support::{bounded, fake_server, logged_number, spec, start, tempdir};

/// How many starts the figures are taken over.
const STARTS: usize = 10;

#[tokio::test]
async fn overhead_per_start_is_small() {
    bounded(async {
        let dir = tempdir();
        let spec = spec(fake_server("m", 0.0, None), "m");
        let mut overheads = Vec::with_capacity(STARTS);
        let mut to_ready = Vec::with_capacity(STARTS);
        for i in 0..STARTS {
            let server = match launch(&spec, &start(dir.path(), &format!("o{i}"))).await {
                Ok(server) => server,
                Err(e) => panic!("launch {i} failed: {e}"),
            };
            let record = server.record().clone();
            server.stop().await;
            let Some(bound) = logged_number(&record.log, "bound ") else {
                panic!("start {i} logged no bind time");
            };
            let started = record.started_at.timestamp_micros() as f64 / 1e6;
            let server_own_s = bound - started;
            overheads.push(record.time_to_ready_s - server_own_s);
            to_ready.push(record.time_to_ready_s);
        }
        let (median, max) = median_max(&mut overheads);
        let (ready_median, ready_max) = median_max(&mut to_ready);
        println!(
            "qexp overhead per start over {STARTS} starts: median {:.1} ms, max {:.1} ms \
             (time to ready: median {:.1} ms, max {:.1} ms)",
            median * 1e3,
            max * 1e3,
            ready_median * 1e3,
            ready_max * 1e3,
        );
        // Generous: the target is under 1 s and it is tens of ms on a quiet host.
        assert!(
            median < Duration::from_secs(1).as_secs_f64(),
            "median {median} s"
        );
    })
    .await;
}

fn median_max(values: &mut [f64]) -> (f64, f64) {
    values.sort_by(f64::total_cmp);
    let median = values.get(values.len() / 2).copied().unwrap_or(f64::NAN);
    let max = values.last().copied().unwrap_or(f64::NAN);
    (median, max)
}
