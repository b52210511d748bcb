#!/usr/bin/env bash
# CI entry point: builds and runs the whole test suite on a fresh clone,
# against real inference servers (vLLM CPU and llama.cpp, tiny model, on
# 127.0.0.1) that it installs and starts itself and stops whatever happens.
#
# The servers install and start in the background while cargo builds (a cold
# build takes ~15 min on 2 cores; the vLLM install ~1 min, its start 3-5 min).
# Venvs and the model live outside the clone under $QEXP_REAL_CACHE
# (~/.cache/qexp-real), so a rerun skips the install.
set -euo pipefail
cd "$(dirname "$0")/../.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/qexp-target}"
export CARGO_TERM_COLOR=never
export CARGO_INCREMENTAL=0

real=scripts/real-servers
# shellcheck source=../scripts/real-servers/env.sh
. "$real/env.sh"
ci_dir="$QEXP_REAL_CACHE/ci"
mkdir -p "$ci_dir"
rm -f "$ci_dir"/*.url

t_start=$SECONDS
starter=""
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    if [ -n "$starter" ]; then
        # The starter leads its own process group (setsid): end it and its
        # readiness polls; the servers have their own groups and pid files.
        kill -TERM -- "-$starter" 2>/dev/null || true
        wait "$starter" 2>/dev/null || true
    fi
    "$real/stop.sh" all || true
    echo "ci: real servers stopped; total $((SECONDS - t_start)) s"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "ci: installing and starting vLLM and llama.cpp in the background (log: $ci_dir/servers.log)"
setsid bash -c '
    set -euo pipefail
    real=$0 out=$1
    "$real/install.sh" all
    "$real/start.sh" llamacpp >"$out/llamacpp.url"
    "$real/start.sh" vllm >"$out/vllm.url"
' "$real" "$ci_dir" >"$ci_dir/servers.log" 2>&1 </dev/null &
starter=$!

cargo --version
cargo fmt --all -- --check
t_build=$SECONDS
cargo test --workspace --no-run
echo "ci: build took $((SECONDS - t_build)) s"

t_wait=$SECONDS
if ! wait "$starter"; then
    starter=""
    echo "ci: the real servers did not start; log tail:" >&2
    tail -n 80 "$ci_dir/servers.log" >&2
    exit 1
fi
starter=""
echo "ci: servers ready $((SECONDS - t_start)) s after the start (waited $((SECONDS - t_wait)) s after the build)"
QEXP_VLLM_URL="$(cat "$ci_dir/vllm.url")"
QEXP_LLAMACPP_URL="$(cat "$ci_dir/llamacpp.url")"
export QEXP_VLLM_URL QEXP_LLAMACPP_URL QEXP_REQUIRE_REAL_SERVERS=1
echo "ci: vLLM at $QEXP_VLLM_URL, llama.cpp at $QEXP_LLAMACPP_URL"

t_test=$SECONDS
cargo test --workspace --no-fail-fast
echo "ci: tests took $((SECONDS - t_test)) s"
