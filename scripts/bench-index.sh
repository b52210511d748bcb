#!/usr/bin/env bash
# Benchmark of `qexp report` writing the workspace index: writes RUNS small
# synthetic runs (two experiments, 4 points x 3 trials each, the synth_runs
# example), then runs `qexp report` twice over them under GNU time: it
# renders the newest run of each experiment and the index of every run
# (each run analysed from its Parquet, history and steps, the charts).
#
#   scripts/bench-index.sh [RUNS=1000] [DIR=/tmp/qexp-bench-index]
#
# The target for RUNS=1000: <= 10 s on a 2-core machine. Builds in release
# in its own target directory (QEXP_BENCH_TARGET_DIR, default
# ~/.cache/qexp-target-release, shared with bench-report.sh);
# QEXP_BENCH_PROFILE=dev measures the test build instead (slower: qexp's
# own crates unoptimised). Peak memory is read by GNU time (Debian:
# `apt-get install time`).
set -euo pipefail
cd "$(dirname "$0")/.."

runs="${1:-1000}"
dir="${2:-/tmp/qexp-bench-index}"
profile="${QEXP_BENCH_PROFILE:-release}"
if [ "$profile" = release ]; then
    export CARGO_TARGET_DIR="${QEXP_BENCH_TARGET_DIR:-$HOME/.cache/qexp-target-release}"
    cargo build --release --bin qexp --example synth_runs
    bin="$CARGO_TARGET_DIR/release"
else
    cargo build --bin qexp --example synth_runs
    bin="${CARGO_TARGET_DIR:-target}/debug"
fi

if [ ! -x /usr/bin/time ]; then
    echo "bench-index: /usr/bin/time (GNU time) is needed for peak memory: apt-get install time" >&2
    exit 2
fi

rm -rf "$dir"
/usr/bin/time -f "bench-index: wrote $runs runs in %e s" "$bin/examples/synth_runs" "$runs" "$dir/results" >/dev/null
echo "bench-index: $(find "$dir/results" -name manifest.json | wc -l) runs, $(du -sh "$dir/results" | cut -f1) under $dir/results ($profile build)"
# The first report reads every run's rows (the index cache under
# $dir/reports/.cache is empty); the second takes the runs' digests from it.
for i in "1 (every run read)" "2 (runs from the index cache)"; do
    /usr/bin/time -f "bench-index: report + index $i: %e s wall, %U s user, %S s sys, peak RSS %M KB" \
        "$bin/qexp" report --results "$dir/results" --out-dir "$dir/reports" >/dev/null
done
du -sh "$dir/reports/index.html" "$dir/reports/index.md"
