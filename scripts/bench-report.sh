#!/usr/bin/env bash
# Benchmark of `qexp report` at scale: builds qexp in release, writes a
# synthetic run with ROWS request rows (each with CHUNKS chunk arrival
# offsets), then renders its report twice and prints wall time and peak
# memory (RSS) of each render.
#
#   scripts/bench-report.sh [ROWS=10000000] [CHUNKS=8] [DIR=/tmp/qexp-bench-report]
#
# The target for ROWS=10000000: <= 10 s and <= 2 GB on a 2-core machine.
# The release build goes to its own target directory so it never waits on
# (or invalidates) the debug build of `cargo test`. Peak memory is read by
# GNU time (Debian: `apt-get install time`).
set -euo pipefail
cd "$(dirname "$0")/.."

rows="${1:-10000000}"
chunks="${2:-8}"
dir="${3:-/tmp/qexp-bench-report}"
export CARGO_TARGET_DIR="${QEXP_BENCH_TARGET_DIR:-$HOME/.cache/qexp-target-release}"

if [ ! -x /usr/bin/time ]; then
    echo "bench-report: /usr/bin/time (GNU time) is needed for peak memory: apt-get install time" >&2
    exit 2
fi

cargo build --release --bin qexp --example synth_run
bin="$CARGO_TARGET_DIR/release"

rm -rf "$dir"
echo "bench-report: writing $rows rows x $chunks chunks under $dir"
run="$(/usr/bin/time -f "bench-report: write + merge: %e s wall, peak RSS %M KB" \
    "$bin/examples/synth_run" "$rows" "$dir/results" "$chunks")"
du -sh "$run"/*.parquet

for i in 1 2; do
    /usr/bin/time -f "bench-report: render $i: %e s wall, %U s user, %S s sys, peak RSS %M KB" \
        "$bin/qexp" report "$run" --out-dir "$dir/reports" >/dev/null
done
