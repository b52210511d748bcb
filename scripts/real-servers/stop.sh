#!/usr/bin/env bash
# Stop servers started by start.sh: SIGTERM to the server's whole process
# group (vLLM forks an engine-core process), SIGKILL after a grace period.
# Idempotent: a missing pid file or a dead process is fine.
#
#   stop.sh [vllm|llamacpp|smollm2|smollm2-embeddings|all]   (default: all)
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"

GRACE_S="${QEXP_REAL_STOP_GRACE_S:-20}"

group_alive() { kill -0 -- "-$1" 2>/dev/null; }

stop_one() {
    local name="$1" pidfile="$QEXP_REAL_RUN/$1.pid" pid
    if [ ! -s "$pidfile" ]; then
        rm -f "$pidfile" "$QEXP_REAL_RUN/$name.url"
        return 0
    fi
    pid="$(cat "$pidfile")"
    if ! [[ "$pid" =~ ^[0-9]+$ ]] || [ "$pid" -le 1 ]; then
        echo "stop.sh: ignoring bad pid file $pidfile" >&2
        rm -f "$pidfile" "$QEXP_REAL_RUN/$name.url"
        return 0
    fi
    # The leader must still be the process start.sh launched: it leads its own
    # group (pgid == pid). A recycled pid in another group is left alone.
    if kill -0 "$pid" 2>/dev/null && [ "$(ps -o pgid= -p "$pid" | tr -d ' ')" != "$pid" ]; then
        echo "stop.sh: pid $pid no longer leads its process group; not killing it" >&2
        rm -f "$pidfile" "$QEXP_REAL_RUN/$name.url"
        return 0
    fi
    if group_alive "$pid"; then
        qexp_real_log "stopping $name (process group $pid)"
        kill -TERM -- "-$pid" 2>/dev/null || true
        local deadline=$((SECONDS + GRACE_S))
        while group_alive "$pid" && ((SECONDS < deadline)); do sleep 0.5; done
        if group_alive "$pid"; then
            qexp_real_log "$name still up after ${GRACE_S}s; SIGKILL"
            kill -KILL -- "-$pid" 2>/dev/null || true
            sleep 0.5
        fi
    fi
    rm -f "$pidfile" "$QEXP_REAL_RUN/$name.url"
}

target="${1:-all}"
case "$target" in
    vllm | llamacpp | smollm2 | smollm2-embeddings) stop_one "$target" ;;
    all) stop_one vllm; stop_one llamacpp; stop_one smollm2; stop_one smollm2-embeddings ;;
    *) echo "usage: stop.sh [vllm|llamacpp|smollm2|smollm2-embeddings|all]" >&2; exit 2 ;;
esac
