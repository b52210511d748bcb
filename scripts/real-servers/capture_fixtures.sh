#!/usr/bin/env bash
# Record what a running real server answers, byte for byte, as fixtures for
# qexp's parsers: scripts/real-servers/fixtures/<engine>/.
#
#   capture_fixtures.sh vllm|llamacpp      (the server must be up: start.sh)
#
# All traffic goes to the 127.0.0.1 URL in $QEXP_REAL_RUN/<engine>.url.
# Sampled text varies run to run (random weights, no seed); shapes do not.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"

engine="${1:-}"
case "$engine" in
    vllm | llamacpp) ;;
    *) echo "usage: capture_fixtures.sh vllm|llamacpp" >&2; exit 2 ;;
esac
url="$(cat "$QEXP_REAL_RUN/$engine.url")"
case "$url" in http://127.0.0.1:*) ;; *) echo "not a loopback URL: $url" >&2; exit 1 ;; esac
out="$QEXP_REAL_SCRIPTS/fixtures/$engine"
mkdir -p "$out"
model="$QEXP_SERVED_MODEL_NAME"
C=(curl -sS --noproxy '*' --max-time 120)

# get NAME PATH: body to NAME, status to NAME.status
get() { "${C[@]}" -o "$out/$1" -w '%{http_code}\n' "$url$2" >"$out/${1%.*}.status"; }
# post NAME PATH JSON: response headers to NAME.headers, raw body to NAME
post() {
    printf '%s\n' "$3" >"$out/${1%.*}.request.json"
    "${C[@]}" -N -D "$out/${1%.*}.headers" -o "$out/$1" -w '%{http_code}\n' \
        -H 'Content-Type: application/json' --data-binary "@$out/${1%.*}.request.json" "$url$2" \
        >"$out/${1%.*}.status"
}
# json PYTHON_EXPR: print a compact JSON document built in Python
json() { python3 -c "import json, sys; print(json.dumps($1, separators=(',', ':')))" "${@:2}"; }

get models.json /v1/models
get health.txt /health

stream_opts='"stream":True,"stream_options":{"include_usage":True},"max_tokens":16,"ignore_eos":True'
post chat_stream.sse /v1/chat/completions \
    "$(json "{'model':'$model','messages':[{'role':'user','content':'Say something about prefix caches.'}],$stream_opts}")"
post completions_stream.sse /v1/completions \
    "$(json "{'model':'$model','prompt':'The benchmark measured the median latency of',$stream_opts}")"
post chat.json /v1/chat/completions \
    "$(json "{'model':'$model','messages':[{'role':'user','content':'Hello'}],'max_tokens':8,'ignore_eos':True}")"

case "$engine" in
    vllm)
        get version.json /version
        post tokenize.json /tokenize "$(json "{'model':'$model','prompt':'The quick brown fox.'}")"
        post tokenize_chat.json /tokenize \
            "$(json "{'model':'$model','messages':[{'role':'user','content':'The quick brown fox.'}],'add_generation_prompt':True}")"
        too_long=140000 # > max_model_len 131072
        ;;
    llamacpp)
        get props.json /props
        get slots.json /slots
        post tokenize.json /tokenize "$(json "{'content':'The quick brown fox.'}")"
        post tokenize_pieces.json /tokenize "$(json "{'content':'<|im_start|>The quick','with_pieces':True,'parse_special':True}")"
        post apply_template.json /apply-template \
            "$(json "{'messages':[{'role':'user','content':'The quick brown fox.'}]}")"
        too_long=$((QEXP_LLAMA_CTX_PER_SLOT + 8000)) # > context per slot
        ;;
esac

# A prompt longer than the context: " the" is one token in the tiny tokenizer.
long_body="$(json "{'model':'$model','messages':[{'role':'user','content':' the' * int(sys.argv[1])}],'max_tokens':16,'stream':True,'stream_options':{'include_usage':True},'ignore_eos':True}" "$too_long")"
post error_too_long_stream.json /v1/chat/completions "$long_body"
post error_too_long.json /v1/chat/completions \
    "$(json "{'model':'$model','messages':[{'role':'user','content':' the' * int(sys.argv[1])}],'max_tokens':16}" "$too_long")"
rm -f "$out"/error_too_long*.request.json # large and trivially regenerated

# Prefix cache: the same ~8K-token prompt twice; the second usage should show
# prompt_tokens_details.cached_tokens > 0.
# A nonce at the start keeps earlier runs' cache entries from matching.
nonce="$(date +%s%N)"
prefix_body="$(json "{'model':'$model','messages':[{'role':'user','content':'cache probe $nonce' + ' prefix' * 8000}],'max_tokens':4,'ignore_eos':True,'stream':True,'stream_options':{'include_usage':True}}")"
post cache_first.sse /v1/chat/completions "$prefix_body"
post cache_second.sse /v1/chat/completions "$prefix_body"
rm -f "$out"/cache_*.request.json

get metrics.txt /metrics # after the requests above, so counters are non-zero
grep -v '^#' "$out/metrics.txt" | sed -E 's/[{ ].*//' | sort -u >"$out/metric_names.txt"

echo "fixtures written to $out"
for f in cache_first.sse cache_second.sse; do
    printf '%s usage: ' "$f"
    grep '"usage"' "$out/$f" | grep -o '"usage":{[^}]*}[^}]*}' | tail -n 1 || echo '(none)'
done
