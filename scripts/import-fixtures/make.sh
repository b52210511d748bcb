#!/usr/bin/env bash
# Makes the import fixtures with the real tools: starts qexp's simulator
# (profile `exact`) on 127.0.0.1, runs `vllm bench serve` against it (the CPU
# vLLM that scripts/real-servers/install.sh installs) and qexp with the same
# workload, and writes their outputs under crates/qexp-import/tests/fixtures/
# with the versions that made them. Needs a built qexp
# ($CARGO_TARGET_DIR/debug/qexp, or QEXP_BIN). No network: the tokenizer is
# the local tiny model's.
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
[ "$only" = all ] || [ "$only" = inference-perf ] || { echo "make.sh: unknown argument $only (none, or inference-perf)" >&2; exit 2; }
[ "$only" != all ] || [ -x "$vllm" ] || { echo "make.sh: no vLLM at $vllm (scripts/real-servers/install.sh vllm)" >&2; exit 2; }
[ -f "$QEXP_TINY_MODEL_DIR/tokenizer.json" ] || { echo "make.sh: no tiny model tokenizer (scripts/real-servers/install.sh)" >&2; exit 2; }

if [ ! -x "$inference_perf_venv/bin/inference-perf" ]; then
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
sim_pid=""
cleanup() { [ -n "$sim_pid" ] && kill "$sim_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

"$qexp" sim --profile exact --port 0 >"$work/sim.log" 2>&1 &
sim_pid=$!
for _ in $(seq 50); do grep -q 'serving on' "$work/sim.log" && break; sleep 0.1; done
url="$(grep -o 'http://127.0.0.1:[0-9]*' "$work/sim.log" | head -1)"
[ -n "$url" ] || { cat "$work/sim.log" >&2; exit 1; }

# inference-perf: the same load (2 streams, 8 requests) on the completions
# endpoint (its random-token prompts serve no other), 64 prompt and 16 output
# tokens as the tiny model's tokenizer counts them, twice; only its
# per-request, summary and stage reports are kept.
inference_perf() {
    rm -rf "$out/inference-perf"
    for t in 1 2; do
        mkdir -p "$out/inference-perf/trial$t"
        cat >"$work/inference-perf$t.yaml" <<YAML
api: {type: completion, streaming: true}
data:
  type: random
  input_distribution: {type: fixed, min: 64, max: 64, mean: 64, std_dev: 0}
  output_distribution: {type: fixed, min: 16, max: 16, mean: 16, std_dev: 0}
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
        HF_HUB_OFFLINE=1 "$inference_perf_venv/bin/inference-perf" --config_file "$work/inference-perf$t.yaml" \
            >"$work/inference-perf$t.log" 2>&1 || { tail -30 "$work/inference-perf$t.log" >&2; exit 1; }
        for f in per_request_lifecycle_metrics.json summary_lifecycle_metrics.json stage_0_lifecycle_metrics.json; do
            cp "$work/inference-perf$t/$f" "$out/inference-perf/trial$t/"
        done
    done
}
if [ "$only" = inference-perf ]; then
    inference_perf
    sed -i '/^inference-perf=/d' "$out/VERSIONS"
    echo "inference-perf=$inference_perf_version" >>"$out/VERSIONS"
    echo "fixtures written under $out/inference-perf"
    exit 0
fi

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

rm -rf "$out/vllm" "$out/qexp" "$out/guidellm" "$out/aiperf"
mkdir -p "$out/vllm" "$out/qexp" "$out/guidellm" "$out/aiperf"
bench() {  # bench NAME [extra args…]
    local name="$1"; shift
    HF_HUB_OFFLINE=1 "$vllm" bench serve --backend openai-chat --endpoint /v1/chat/completions \
        --base-url "$url" --model sim-exact --tokenizer "$QEXP_TINY_MODEL_DIR" \
        --dataset-name sharegpt --dataset-path "$work/prompts.json" --sharegpt-output-len 16 \
        --num-prompts 8 --max-concurrency 2 --ignore-eos \
        --percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 50,90,99 \
        --save-result --result-dir "$out/vllm" --result-filename "$name.json" "$@" \
        >"$work/$name.log" 2>&1 || { tail -30 "$work/$name.log" >&2; exit 1; }
}
for t in 1 2 3 4 5; do bench "detailed-trial$t" --save-detailed --seed "$t"; done
bench summary-only

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

"$qexp" run "$here/plan.toml" --target "$url" --out "$out/qexp" --no-report >"$work/qexp.log" 2>&1 ||
    { tail -30 "$work/qexp.log" >&2; exit 1; }

{
    echo "# Made by scripts/import-fixtures/make.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "vllm=$("$QEXP_VLLM_VENV/bin/python" -c 'import vllm; print(vllm.__version__)' 2>/dev/null)"
    echo "guidellm=$("$guidellm_venv/bin/guidellm" --version | awk '{print $NF}')"
    echo "aiperf=$aiperf_version"
    echo "inference-perf=$inference_perf_version"
    echo "qexp=$("$qexp" --version | awk '{print $2}')"
    echo "server=qexp sim --profile exact"
} >"$out/VERSIONS"
echo "fixtures written under $out"
