#!/usr/bin/env bash
# Benchmark of `qexp merge` at scale: builds qexp in release, writes the
# SHARDS shard folders of one synthetic run with ROWS request rows in all
# (each with CHUNKS chunk arrival offsets), merges them under GNU time (wall
# time and peak memory), then renders the merged run's report the same way.
#
#   scripts/bench-merge.sh [ROWS=10000000] [CHUNKS=8] [SHARDS=4] [DIR=/tmp/qexp-bench-merge]
#
# A merge reads a (trial, point) a row group at a time (from every shard):
# its peak follows neither the run nor its largest (trial, point). The
# release build shares scripts/bench-report.sh's target directory.
set -euo pipefail
cd "$(dirname "$0")/.."

rows="${1:-10000000}"
chunks="${2:-8}"
shards="${3:-4}"
dir="${4:-/tmp/qexp-bench-merge}"
export CARGO_TARGET_DIR="${QEXP_BENCH_TARGET_DIR:-$HOME/.cache/qexp-target-release}"

if [ ! -x /usr/bin/time ]; then
    echo "bench-merge: /usr/bin/time (GNU time) is needed for peak memory: apt-get install time" >&2
    exit 2
fi

cargo build --release --bin qexp --example synth_run
bin="$CARGO_TARGET_DIR/release"

rm -rf "$dir"
echo "bench-merge: writing $rows rows x $chunks chunks as $shards shards under $dir"
mapfile -t shard_dirs < <(/usr/bin/time -f "bench-merge: write: %e s wall, peak RSS %M KB" \
    "$bin/examples/synth_run" "$rows" "$dir/shards" "$chunks" "$shards")
du -shc "${shard_dirs[@]/%//requests.parquet}" | tail -1

/usr/bin/time -f "bench-merge: merge: %e s wall, %U s user, %S s sys, peak RSS %M KB" \
    "$bin/qexp" merge "${shard_dirs[@]}" --out "$dir/merged"
/usr/bin/time -f "bench-merge: report of the merged run: %e s wall, %U s user, %S s sys, peak RSS %M KB" \
    "$bin/qexp" report "$dir/merged" --out-dir "$dir/reports" --no-index >/dev/null
