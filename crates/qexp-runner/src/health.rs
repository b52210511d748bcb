//! Load-generator health: how busy qexp itself was while it measured a
//! point. A client that is short of CPU or whose event loop is slow to run
//! ready tasks stamps chunk arrivals late and sends late; the point row
//! keeps both figures and the report flags a trial where qexp, not the
//! server, may have set the pace.

use std::time::{Duration, Instant};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// How often the probe asks the event loop to wake it.
const TICK: Duration = Duration::from_millis(10);

/// User + system CPU seconds of this process so far, all threads (as
/// getrusage's RUSAGE_SELF counts them, in 10 ms ticks); `None` where
/// `/proc/self/stat` cannot be read.
pub fn process_cpu_s() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name, which is parenthesised and may hold spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of stat(5), 12 and 13 here.
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / CLOCK_TICKS_PER_S)
}

/// `sysconf(_SC_CLK_TCK)`, 100 on every Linux architecture qexp runs on.
const CLOCK_TICKS_PER_S: f64 = 100.0;

/// What the probe measured over one point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Health {
    /// qexp's CPU seconds per wall second (cores used).
    pub cpu_cores: Option<f64>,
    /// p99 of how late the event loop woke a task whose timer was due, s.
    pub loop_lag_p99_s: Option<f64>,
}

/// A running probe: a task that sleeps a tick at a time and notes how late
/// each wake-up came (tokio's timer itself rounds up to the millisecond).
pub(crate) struct Probe {
    cpu0: Option<f64>,
    t0: Instant,
    stop: oneshot::Sender<()>,
    task: JoinHandle<Vec<f64>>,
}

impl Probe {
    /// Starts measuring (on the current runtime).
    pub(crate) fn start() -> Probe {
        let (stop, mut stopped) = oneshot::channel();
        let task = tokio::spawn(async move {
            let mut lags = Vec::new();
            let mut due = tokio::time::Instant::now() + TICK;
            loop {
                tokio::select! {
                    () = tokio::time::sleep_until(due) => {
                        let now = tokio::time::Instant::now();
                        lags.push(now.saturating_duration_since(due).as_secs_f64());
                        due = now + TICK;
                    }
                    _ = &mut stopped => break,
                }
            }
            lags
        });
        Probe {
            cpu0: process_cpu_s(),
            t0: Instant::now(),
            stop,
            task,
        }
    }

    /// Stops the probe and gives what it measured.
    pub(crate) async fn finish(self) -> Health {
        let wall = self.t0.elapsed().as_secs_f64();
        let cpu = self.cpu0.zip(process_cpu_s()).map(|(a, b)| b - a);
        let _ = self.stop.send(());
        let mut lags = self.task.await.unwrap_or_default();
        Health {
            cpu_cores: cpu.filter(|_| wall > 0.0).map(|c| c / wall),
            loop_lag_p99_s: p99(&mut lags),
        }
    }
}

/// The 99th percentile (nearest rank), `None` for no samples.
fn p99(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_unstable_by(f64::total_cmp);
    let rank = ((v.len() as f64) * 0.99).ceil() as usize;
    Some(v[rank.clamp(1, v.len()) - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p99_is_the_nearest_rank() {
        let mut v: Vec<f64> = (1..=200).map(f64::from).collect();
        assert_eq!(p99(&mut v), Some(198.0));
        assert_eq!(p99(&mut [3.0]), Some(3.0));
        assert_eq!(p99(&mut []), None);
    }

    #[tokio::test]
    async fn a_blocked_event_loop_shows_as_lag() {
        let probe = Probe::start();
        tokio::time::sleep(Duration::from_millis(60)).await;
        // Hold the runtime's only thread: the probe's timer comes due meanwhile.
        std::thread::sleep(Duration::from_millis(150));
        tokio::time::sleep(Duration::from_millis(30)).await;
        let h = probe.finish().await;
        let lag = h.loop_lag_p99_s.expect("the probe woke");
        assert!(lag >= 0.1, "lag p99 {lag} s after a 150 ms block");
        assert!(h.cpu_cores.is_some_and(|c| c >= 0.0));
    }

    #[tokio::test]
    async fn an_idle_event_loop_shows_little_lag() {
        let probe = Probe::start();
        tokio::time::sleep(Duration::from_millis(200)).await;
        let lag = probe.finish().await.loop_lag_p99_s.expect("the probe woke");
        // Far below the 150 ms block above, whatever else the machine runs.
        assert!(lag < 0.1, "lag p99 {lag} s with nothing to do");
    }
}
