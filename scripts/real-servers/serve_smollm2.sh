#!/usr/bin/env bash
# Serve SmolLM2-135M-Instruct with llama.cpp (serve_llamacpp.py in the llama
# venv) in the foreground, until SIGTERM. start.sh smollm2 runs it in the
# background; a qexp plan's [[deployment]] can run it itself:
#
#   command = ["scripts/real-servers/serve_smollm2.sh", "--host", "{host}",
#              "--port", "{port}", "--alias", "{model}"]        # + "--spec", "ngram"
#
# Defaults: served name $QEXP_SMOLLM2_MODEL_NAME (smollm2), 127.0.0.1, port 0
# (any free one; see --url-file), $QEXP_SMOLLM2_SLOTS slots of
# $QEXP_SMOLLM2_CTX_PER_SLOT tokens, $QEXP_SMOLLM2_THREADS thread(s). Any
# argument of serve_llamacpp.py given here overrides its default (the last
# one wins). Installs nothing: run `install.sh smollm2` first.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"

py="$QEXP_LLAMA_VENV/bin/python"
if [ ! -x "$py" ] || [ ! -f "$QEXP_SMOLLM2_GGUF" ]; then
    echo "serve_smollm2.sh: not installed; run scripts/real-servers/install.sh smollm2" >&2
    exit 1
fi
PYTHONUNBUFFERED=1 exec "$py" "$QEXP_REAL_SCRIPTS/serve_llamacpp.py" \
    --model "$QEXP_SMOLLM2_GGUF" --alias "$QEXP_SMOLLM2_MODEL_NAME" \
    --host 127.0.0.1 --port 0 \
    --slots "$QEXP_SMOLLM2_SLOTS" --ctx-per-slot "$QEXP_SMOLLM2_CTX_PER_SLOT" \
    --threads "$QEXP_SMOLLM2_THREADS" --jinja \
    "$@"
