#!/usr/bin/env bash
# Makes the import fixtures with the real tools: starts qexp's simulator
# (profile `exact`) on 127.0.0.1, runs `vllm bench serve` against it (the CPU
# vLLM that scripts/real-servers/install.sh installs) and qexp with the same
# workload, and writes their outputs under crates/qexp-import/tests/fixtures/
# with the versions that made them. Needs a built qexp
# ($CARGO_TARGET_DIR/debug/qexp, or QEXP_BIN). No network: the tokenizer is
# the local tiny model's.
#
#   make.sh                  every fixture
#   make.sh inference-perf   only inference-perf's
#   make.sh failures         only the runs against a simulator that fails some requests
#   make.sh vllm-bench       only the Rust vllm-bench's (QEXP_VLLM_BENCH names its
#                            binary: it is on no package registry, so nothing here
#                            installs it; QEXP_VLLM_BENCH_COMMIT, the commit it was
#                            built from, is recorded beside its version)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
. "$repo/scripts/real-servers/env.sh"
qexp="${QEXP_BIN:-${CARGO_TARGET_DIR:-$repo/target}/debug/qexp}"
out="$repo/crates/qexp-import/tests/fixtures"
vllm="$QEXP_VLLM_VENV/bin/vllm"
# GuideLLM from PyPI, pinned, in a venv of its own (uv from scripts/real-servers).
guidellm_version=0.8.1
guidellm_venv="$QEXP_REAL_CACHE/venvs/guidellm-$guidellm_version"
# AIPerf from PyPI, pinned, likewise.
aiperf_version=0.13.0
aiperf_venv="$QEXP_REAL_CACHE/venvs/aiperf-$aiperf_version"
# inference-perf from PyPI, pinned, likewise; it needs Python 3.12 or newer
# (QEXP_PYTHON312 names one when uv finds none on the PATH).
inference_perf_version=0.7.0
inference_perf_venv="$QEXP_REAL_CACHE/venvs/inference-perf-$inference_perf_version"
only="${1:-all}"
[ -x "$qexp" ] || { echo "make.sh: no qexp binary at $qexp (cargo build first)" >&2; exit 2; }
case "$only" in all | inference-perf | failures | vllm-bench) ;; *)
    echo "make.sh: unknown argument $only (none, inference-perf, failures or vllm-bench)" >&2; exit 2 ;;
esac
case "$only" in all | failures) [ -x "$vllm" ] || { echo "make.sh: no vLLM at $vllm (scripts/real-servers/install.sh vllm)" >&2; exit 2; } ;; esac
vllm_bench="${QEXP_VLLM_BENCH:-}"
[ "$only" != vllm-bench ] || [ -x "$vllm_bench" ] || { echo "make.sh: QEXP_VLLM_BENCH names no vllm-bench binary" >&2; exit 2; }
[ -f "$QEXP_TINY_MODEL_DIR/tokenizer.json" ] || { echo "make.sh: no tiny model tokenizer (scripts/real-servers/install.sh)" >&2; exit 2; }

if { [ "$only" = all ] || [ "$only" = inference-perf ]; } && [ ! -x "$inference_perf_venv/bin/inference-perf" ]; then
    [ -x "$QEXP_UV" ] || { echo "make.sh: no uv at $QEXP_UV (scripts/real-servers/install.sh)" >&2; exit 2; }
    "$QEXP_UV" venv -q -p "${QEXP_PYTHON312:-3.12}" "$inference_perf_venv"
    "$QEXP_UV" pip install -q -p "$inference_perf_venv/bin/python" "inference-perf==$inference_perf_version"
fi

if [ "$only" = all ] && [ ! -x "$guidellm_venv/bin/guidellm" ]; then
    [ -x "$QEXP_UV" ] || { echo "make.sh: no uv at $QEXP_UV (scripts/real-servers/install.sh)" >&2; exit 2; }
    "$QEXP_UV" venv -q -p 3.11 "$guidellm_venv"
    "$QEXP_UV" pip install -q -p "$guidellm_venv/bin/python" "guidellm==$guidellm_version"
fi

if [ "$only" = all ] && [ ! -x "$aiperf_venv/bin/aiperf" ]; then
    "$QEXP_UV" venv -q -p 3.11 "$aiperf_venv"
    "$QEXP_UV" pip install -q -p "$aiperf_venv/bin/python" "aiperf==$aiperf_version"
fi

work="$(mktemp -d)"
sim_pids=()
cleanup() {
    for pid in "${sim_pids[@]}"; do kill "$pid" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

# start_sim NAME [qexp sim args…]: starts a simulator (profile `exact`) on
# 127.0.0.1 and sets $url to its address.
start_sim() {
    local name="$1"; shift
    "$qexp" sim --profile exact --port 0 "$@" >"$work/$name.log" 2>&1 &
    sim_pids+=($!)
    for _ in $(seq 50); do grep -q 'serving on' "$work/$name.log" && break; sleep 0.1; done
    url="$(grep -o 'http://127.0.0.1:[0-9]*' "$work/$name.log" | head -1)"
    [ -n "$url" ] || { cat "$work/$name.log" >&2; exit 1; }
}
start_sim sim

# inference-perf: the same load (2 streams, 8 requests) on the completions
# endpoint, twice; only its per-request, summary and stage reports are kept.
# Its random-token prompts reach the simulator as however many words the
# tiny model's tokens decode to, so it reads ShareGPT-shaped prompts of
# exactly 64 words (the simulator adds no template on completions) and
# asks 16 output tokens (the answer turn's length in the tiny model's
# tokenizer, which is what inference-perf sends as max_tokens): the
# workload of plan-completions.toml, so --plan's length check holds.
inference_perf() {
    HF_HUB_OFFLINE=1 "$inference_perf_venv/bin/python" - "$QEXP_TINY_MODEL_DIR" "$work/completion-prompts.json" <<'PY'
import json, sys
from transformers import AutoTokenizer
tok = AutoTokenizer.from_pretrained(sys.argv[1])
words = "the quick brown fox jumps over a lazy dog near the river bank".split()
count = lambda a: len(tok(" ".join(a))["input_ids"])
answer = []
while count(answer) < 16:
    fits = [w for w in words + ["a", "I", "x"] if count(answer + [w]) <= 16]
    assert fits, "no 16-token answer"
    answer.append(fits[0])
rows = []
for i in range(64):
    text = " ".join([f"p{i}"] + [words[j % len(words)] for j in range(63)])
    rows.append({"id": str(i), "conversations": [
        {"from": "human", "value": text}, {"from": "gpt", "value": " ".join(answer)}]})
json.dump(rows, open(sys.argv[2], "w"))
PY
    rm -rf "$out/inference-perf"
    for t in 1 2; do
        mkdir -p "$out/inference-perf/trial$t"
        cat >"$work/inference-perf$t.yaml" <<YAML
api: {type: completion, streaming: true}
data: {type: shareGPT, path: "$work/completion-prompts.json"}
load:
  type: concurrent
  num_workers: 1
  base_seed: $t
  stages: [{num_requests: 8, concurrency_level: 2}]
server: {type: vllm, model_name: sim-exact, base_url: "$url", ignore_eos: true}
tokenizer: {pretrained_model_name_or_path: "$QEXP_TINY_MODEL_DIR"}
report:
  request_lifecycle:
    per_request: true
    per_request_fields: {request: true, response: false, response_chunks: false, computed_metrics: false}
storage: {local_storage: {path: "$work/inference-perf$t"}}
YAML
        HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 "$inference_perf_venv/bin/inference-perf" --config_file "$work/inference-perf$t.yaml" \
            >"$work/inference-perf$t.log" 2>&1 || { tail -30 "$work/inference-perf$t.log" >&2; exit 1; }
        for f in per_request_lifecycle_metrics.json summary_lifecycle_metrics.json stage_0_lifecycle_metrics.json; do
            cp "$work/inference-perf$t/$f" "$out/inference-perf/trial$t/"
        done
    done
}
# ShareGPT-shaped prompts of 57 words: with the 7 chat-template tokens the
# simulator adds, the 64 prompt tokens of plan.toml as the simulator counts
# them (one word, one token), so --plan's length check holds.
python3 - "$work/prompts.json" <<'PY'
import json, sys
words = "the quick brown fox jumps over a lazy dog near the river bank".split()
rows = []
for i in range(64):
    text = " ".join([f"w{i}"] + [words[j % len(words)] for j in range(56)])
    rows.append({"id": str(i), "conversations": [
        {"from": "human", "value": text}, {"from": "gpt", "value": "ok"}]})
json.dump(rows, open(sys.argv[1], "w"))
PY

# bench DIR NAME [extra args…]: `vllm bench serve` (or, with BENCH set, the
# Rust vllm-bench, whose flags are the same) with the workload of plan.toml,
# its result saved as DIR/NAME.json.
bench() {
    local dir="$1" name="$2"; shift 2
    local cmd=("$vllm" bench serve)
    [ -z "${BENCH:-}" ] || cmd=("$BENCH")
    mkdir -p "$dir"
    HF_HUB_OFFLINE=1 "${cmd[@]}" --backend openai-chat --endpoint /v1/chat/completions \
        --base-url "$url" --model sim-exact --tokenizer "$QEXP_TINY_MODEL_DIR" \
        --dataset-name sharegpt --dataset-path "$work/prompts.json" --sharegpt-output-len 16 \
        --num-prompts 8 --max-concurrency 2 --ignore-eos \
        --percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 50,90,99 \
        --save-result --result-dir "$dir" --result-filename "$name.json" "$@" \
        >"$work/$name.log" 2>&1 || { tail -30 "$work/$name.log" >&2; exit 1; }
}

# The Rust vllm-bench: the same workload, three times with --save-detailed.
vllm_bench() {
    rm -rf "$out/vllm-bench"
    for t in 1 2 3; do BENCH="$vllm_bench" bench "$out/vllm-bench" "detailed-trial$t" --save-detailed --seed "$t"; done
}

# Runs that meet failures: a simulator of its own fails a seeded share of
# requests (HTTP 500, or the stream cut after 3 chunks; the seed spares the
# tools' first request, a start-up probe they stop on); vllm bench serve,
# and the Rust vllm-bench where QEXP_VLLM_BENCH names it, record them.
failures() {
    local main_url="$url"
    rm -f "$out/vllm/failures.json" "$out/vllm-bench/failures.json"
    start_sim failing-sim --faults http_500:0.15,reset=3:0.15 --fault-seed "${QEXP_FAULT_SEED:-3}"
    bench "$out/vllm" failures --save-detailed --seed 11
    if [ -x "$vllm_bench" ]; then
        start_sim failing-sim2 --faults http_500:0.15,reset=3:0.15 --fault-seed "${QEXP_FAULT_SEED:-3}"
        BENCH="$vllm_bench" bench "$out/vllm-bench" failures --save-detailed --seed 11
    fi
    url="$main_url"
}

# versions KEY=VALUE…: replaces those lines of VERSIONS.
versions() {
    for kv in "$@"; do
        sed -i "/^${kv%%=*}=/d" "$out/VERSIONS"
        echo "$kv" >>"$out/VERSIONS"
    done
}
vllm_version() { "$QEXP_VLLM_VENV/bin/python" -c 'import vllm; print(vllm.__version__)' 2>/dev/null; }
vllm_bench_version() { echo "$("$vllm_bench" --version | awk '{print $NF}')${QEXP_VLLM_BENCH_COMMIT:+ (commit $QEXP_VLLM_BENCH_COMMIT)}"; }

case "$only" in
inference-perf)
    inference_perf
    versions "inference-perf=$inference_perf_version"
    echo "fixtures written under $out/inference-perf"
    exit 0 ;;
failures)
    failures
    versions "vllm=$(vllm_version)" "faults=qexp sim --profile exact --faults http_500:0.15,reset=3:0.15 --fault-seed ${QEXP_FAULT_SEED:-3}"
    [ ! -x "$vllm_bench" ] || versions "vllm-bench=$(vllm_bench_version)"
    echo "failure fixtures written under $out"
    exit 0 ;;
vllm-bench)
    vllm_bench
    versions "vllm-bench=$(vllm_bench_version)"
    echo "fixtures written under $out/vllm-bench"
    exit 0 ;;
esac

rm -rf "$out/vllm" "$out/qexp" "$out/guidellm" "$out/aiperf"
mkdir -p "$out/vllm" "$out/qexp" "$out/guidellm" "$out/aiperf"
for t in 1 2 3 4 5; do bench "$out/vllm" "detailed-trial$t" --save-detailed --seed "$t"; done
bench "$out/vllm" summary-only

# GuideLLM: the same load (2 streams, 8 requests, 64 prompt and 16 output
# tokens of its synthetic text, counted by the tiny model's tokenizer), three times.
for t in 1 2 3; do
    HF_HUB_OFFLINE=1 "$guidellm_venv/bin/guidellm" run \
        --backend "kind=openai_http,target=$url,model=sim-exact,request_format=/v1/chat/completions" \
        --profile kind=concurrent,streams=2 --constraint kind=max_requests,count=8 \
        --tokenizer "kind=hf_auto,model=$QEXP_TINY_MODEL_DIR" \
        --data kind=synthetic_text,prompt_tokens=64,output_tokens=16 --seed "kind=static,value=$t" \
        --output "kind=json,path=$out/guidellm/benchmarks-trial$t.json" \
        --disable-console-interactive >"$work/guidellm$t.log" 2>&1 || { tail -30 "$work/guidellm$t.log" >&2; exit 1; }
done

# AIPerf: the same load, twice; only its per-request export and summary are
# kept. (Its tokenizer loader looks the local path up on the hub first and
# falls back to the folder when that fails, as it does offline.)
for t in 1 2; do
    "$aiperf_venv/bin/aiperf" profile --model sim-exact --url "$url" --endpoint-type chat --streaming \
        --concurrency 2 --request-count 8 --synthetic-input-tokens-mean 64 --output-tokens-mean 16 \
        --tokenizer "$QEXP_TINY_MODEL_DIR" --random-seed "$t" --artifact-dir "$work/aiperf$t" --ui-type none \
        >"$work/aiperf$t.log" 2>&1 || { tail -30 "$work/aiperf$t.log" >&2; exit 1; }
    mkdir -p "$out/aiperf/trial$t"
    cp "$work/aiperf$t/profile_export.jsonl" "$work/aiperf$t/profile_export_aiperf.json" "$out/aiperf/trial$t/"
done

inference_perf
failures
[ ! -x "$vllm_bench" ] || vllm_bench

"$qexp" run "$here/plan.toml" --target "$url" --out "$out/qexp" --no-report >"$work/qexp.log" 2>&1 ||
    { tail -30 "$work/qexp.log" >&2; exit 1; }

{
    echo "# Made by scripts/import-fixtures/make.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "vllm=$(vllm_version)"
    [ ! -x "$vllm_bench" ] || echo "vllm-bench=$(vllm_bench_version)"
    echo "guidellm=$("$guidellm_venv/bin/guidellm" --version | awk '{print $NF}')"
    echo "aiperf=$aiperf_version"
    echo "inference-perf=$inference_perf_version"
    echo "qexp=$("$qexp" --version | awk '{print $2}')"
    echo "server=qexp sim --profile exact"
    echo "faults=qexp sim --profile exact --faults http_500:0.15,reset=3:0.15 --fault-seed ${QEXP_FAULT_SEED:-3}"
} >"$out/VERSIONS"
echo "fixtures written under $out"
