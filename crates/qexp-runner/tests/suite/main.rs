//! qexp-runner's integration tests, as one test binary (one link of
//! polars): the closed- and open-loop schedulers on a fake backend and
//! tokio's paused clock.

mod open_loop;
mod scheduler;
