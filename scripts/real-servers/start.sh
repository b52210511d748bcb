#!/usr/bin/env bash
# Start a real inference server on 127.0.0.1 in the background and wait until
# it answers GET /v1/models.
#
#   start.sh vllm|llamacpp|smollm2|smollm2-embeddings
#
# smollm2: SmolLM2-135M-Instruct (a real model, for answer checks) on
# llama.cpp, served as "smollm2", plain decoding (serve_smollm2.sh).
# smollm2-embeddings: a second SmolLM2 instance started with --embeddings
# (/v1/embeddings, mean pooling), for embeddings plans.
#
# Writes $QEXP_REAL_RUN/<name>.url (http://127.0.0.1:PORT), <name>.pid (the
# leader of the server's own process group) and $QEXP_REAL_LOGS/<name>.log.
# Prints the URL on stdout. Runs install.sh <name> first (a no-op when done).
# On failure or timeout: prints the log tail, stops the server, exits 1.
# Already running and answering: prints the URL and exits 0.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"

name="${1:-}"
case "$name" in
    vllm | llamacpp | smollm2 | smollm2-embeddings) ;;
    *) echo "usage: start.sh vllm|llamacpp|smollm2|smollm2-embeddings" >&2; exit 2 ;;
esac

pidfile="$QEXP_REAL_RUN/$name.pid"
urlfile="$QEXP_REAL_RUN/$name.url"
log="$QEXP_REAL_LOGS/$name.log"
mkdir -p "$QEXP_REAL_RUN" "$QEXP_REAL_LOGS" "$QEXP_REAL_SCRATCH"

# ready URL: GET URL/v1/models answers 200 (no proxy, 127.0.0.1 only).
ready() {
    python3 - "$1" <<'EOF'
import sys, urllib.request
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
try:
    with opener.open(sys.argv[1] + "/v1/models", timeout=5) as r:
        sys.exit(0 if r.status == 200 else 1)
except Exception:
    sys.exit(1)
EOF
}

alive() { [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }

if alive && [ -f "$urlfile" ] && ready "$(cat "$urlfile")"; then
    qexp_real_log "$name already running at $(cat "$urlfile") (pid $(cat "$pidfile"))"
    cat "$urlfile"
    exit 0
fi
"$QEXP_REAL_SCRIPTS/stop.sh" "$name" >/dev/null 2>&1 || true
rm -f "$pidfile" "$urlfile"

"$QEXP_REAL_SCRIPTS/install.sh" "${name%-embeddings}"

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# launch CMD...: run CMD in a new session (its own process group) with output
# to $log; the leader's pid lands in $pidfile whether or not setsid forks.
launch() {
    : >"$log"
    # shellcheck disable=SC2016  # expanded by the inner bash
    setsid bash -c 'echo $$ >"$0"; exec "$@"' "$pidfile" "$@" </dev/null >>"$log" 2>&1 &
    local _
    for _ in $(seq 50); do [ -s "$pidfile" ] && return; sleep 0.1; done
    echo "server process did not start" >&2
    exit 1
}

case "$name" in
    vllm)
        timeout="$QEXP_VLLM_READY_TIMEOUT"
        port="$(free_port)"
        scratch="$QEXP_REAL_SCRATCH/vllm"
        mkdir -p "$scratch/tmp" "$scratch/cache" "$scratch/hf"
        printf 'http://127.0.0.1:%s\n' "$port" >"$urlfile"
        # `python -m vllm.entrypoints.cli.main serve` is `vllm serve` without
        # the console script (python -m vllm.entrypoints.openai.api_server is
        # deprecated in 0.32). VLLM_TARGET_DEVICE=cpu pins the CPU platform;
        # VLLM_HOST_IP keeps its engine-core sockets on loopback.
        # shellcheck disable=SC2086  # QEXP_VLLM_EXTRA_ARGS is a word list
        VLLM_CPU_KVCACHE_SPACE="$QEXP_VLLM_KVCACHE_GIB" \
            VLLM_CACHE_ROOT="$scratch/cache" TMPDIR="$scratch/tmp" \
            HF_HOME="$scratch/hf" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
            VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 PYTHONUNBUFFERED=1 \
            VLLM_TARGET_DEVICE=cpu VLLM_HOST_IP=127.0.0.1 VLLM_LOOPBACK_IP=127.0.0.1 \
            launch "$QEXP_VLLM_VENV/bin/python" -m vllm.entrypoints.cli.main serve "$QEXP_TINY_MODEL_DIR" \
            --host 127.0.0.1 --port "$port" \
            --served-model-name "$QEXP_SERVED_MODEL_NAME" \
            --max-model-len "$QEXP_VLLM_MAX_MODEL_LEN" \
            --enable-prefix-caching --enable-prompt-tokens-details \
            ${QEXP_VLLM_EXTRA_ARGS:-}
        ;;
    llamacpp)
        timeout="$QEXP_LLAMA_READY_TIMEOUT"
        # Port 0: llama.cpp binds a free port itself and serve_llamacpp.py
        # writes the real address to $urlfile once it listens (no race).
        PYTHONUNBUFFERED=1 launch "$QEXP_LLAMA_VENV/bin/python" "$QEXP_REAL_SCRIPTS/serve_llamacpp.py" \
            --model "$QEXP_TINY_GGUF" --alias "$QEXP_SERVED_MODEL_NAME" \
            --host 127.0.0.1 --port 0 \
            --slots "$QEXP_LLAMA_SLOTS" --ctx-per-slot "$QEXP_LLAMA_CTX_PER_SLOT" \
            --threads "$QEXP_LLAMA_THREADS" \
            --url-file "$urlfile"
        ;;
    smollm2)
        timeout="$QEXP_LLAMA_READY_TIMEOUT"
        launch "$QEXP_REAL_SCRIPTS/serve_smollm2.sh" --port 0 --url-file "$urlfile"
        ;;
    smollm2-embeddings)
        timeout="$QEXP_LLAMA_READY_TIMEOUT"
        launch "$QEXP_REAL_SCRIPTS/serve_smollm2.sh" --port 0 --url-file "$urlfile" --embeddings
        ;;
esac

pid="$(cat "$pidfile")"
qexp_real_log "started $name (pid $pid, log $log); waiting up to ${timeout}s"
start_s=$SECONDS
while :; do
    if ! kill -0 "$pid" 2>/dev/null; then
        qexp_real_log "$name exited before it was ready; log tail:"
        tail -n 60 "$log" >&2
        rm -f "$pidfile" "$urlfile"
        exit 1
    fi
    if [ -s "$urlfile" ] && ready "$(cat "$urlfile")"; then
        break
    fi
    if ((SECONDS - start_s >= timeout)); then
        qexp_real_log "$name not ready after ${timeout}s; log tail:"
        tail -n 60 "$log" >&2
        "$QEXP_REAL_SCRIPTS/stop.sh" "$name" >&2 || true
        exit 1
    fi
    sleep 1
done
qexp_real_log "$name ready at $(cat "$urlfile") after $((SECONDS - start_s))s"
cat "$urlfile"
