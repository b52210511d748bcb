#!/usr/bin/env python3
"""Run llama.cpp's own C++ HTTP server (embedded in the xllamacpp wheel) until signalled.

xllamacpp.Server(params) loads the model and starts llama.cpp's server on
params.hostnames/params.port in native threads; this process only keeps it
alive and writes the address it really listens on (port 0 = the kernel picks a
free port, so there is no race) to --url-file once it is up.

llama.cpp sizing: with kv_unified off, the KV cache of n_ctx tokens is split
evenly between the n_parallel slots, so n_ctx = per-slot context x slots.

Chat: with --jinja, /v1/chat/completions formats messages with the GGUF's
own tokenizer.chat_template through llama.cpp's Jinja engine (use_jinja on,
chat_template left empty so the model's is used; /props shows it); SmolLM2
is served so. Without it (the tiny model), llama.cpp's built-in templates,
as the fitted llama.cpp figures were measured.

--embeddings serves /v1/embeddings (mean pooling) instead of generation:
SmolLM2's GGUF gives embeddings too. No rerank: llama.cpp's --reranking needs
a model with a ranking head, which SmolLM2 has not.

--spec ngram turns on llama.cpp's n-gram speculative decoding that needs no
draft model (ngram-simple: the last N tokens, looked up in the slot's own
history, draft the M tokens that followed them; the model verifies the draft
in one batch, so the text at temperature 0 is the same as without). N and M
default to 6 and 6, not llama.cpp's 12 and 48: with those, SmolLM2's loops
(~7 tokens a turn, "la femme au martyre, ") drafted nothing at all. /metrics
counts llamacpp:spec_decode_num_draft_tokens_total, ..._accepted_tokens_total
and ..._drafts_total; a response's `timings` carry draft_n and
draft_n_accepted (absent when nothing was drafted). /props keeps saying
"speculative.types": "none" (a per-request default, not the server's state).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading

import xllamacpp as xlc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="GGUF file")
    ap.add_argument("--alias", default="tiny-llama", help="served model name")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0, help="0 = any free port")
    ap.add_argument("--slots", type=int, default=16, help="parallel slots (n_parallel)")
    ap.add_argument("--ctx-per-slot", type=int, default=32784, help="context tokens per slot")
    ap.add_argument("--threads", type=int, default=0, help="CPU threads (0 = all cores)")
    ap.add_argument("--url-file", help="write http://HOST:PORT here once listening")
    ap.add_argument(
        "--jinja",
        action="store_true",
        help="format chats with the GGUF's own chat template (Jinja)",
    )
    ap.add_argument(
        "--spec",
        choices=("off", "ngram"),
        default="off",
        help="speculative decoding: off, or ngram (ngram-simple, no draft model)",
    )
    ap.add_argument(
        "--embeddings",
        action="store_true",
        help="serve /v1/embeddings (mean pooling) instead of generation",
    )
    ap.add_argument("--spec-ngram-n", type=int, default=6, help="ngram: lookup n-gram size")
    ap.add_argument("--spec-ngram-m", type=int, default=6, help="ngram: drafted tokens per hit")
    args = ap.parse_args()

    threads = args.threads or (os.cpu_count() or 1)
    p = xlc.CommonParams()
    p.model.path = args.model
    p.model_alias = {args.alias}
    p.hostnames = [args.host]
    p.port = args.port
    p.n_parallel = args.slots
    p.kv_unified = False  # each slot gets exactly n_ctx / n_parallel tokens
    p.n_ctx = args.ctx_per_slot * args.slots
    p.fit_params = False  # keep n_ctx as asked; do not shrink it to "fit" memory
    p.cont_batching = True
    p.cache_prompt = True
    # No RAM prompt cache (llama.cpp's default keeps 8 GiB of finished
    # prompts): each new task searched it, so that TTFT grew with the
    # requests served before (c=1, 128 tokens: 10-12 ms fresh, 15 ms after
    # 4,000 requests, 32 ms after the suite), and a timing test measured
    # the server's history. A slot still reuses its own cached prefix.
    p.cache_ram_mib = 0
    p.endpoint_metrics = True
    p.endpoint_props = True
    p.endpoint_slots = True
    p.ui = False
    if args.jinja:
        p.use_jinja = True  # the GGUF's chat template, as a Jinja template
        p.chat_template = ""  # empty: the model's tokenizer.chat_template
    if args.embeddings:
        # llama.cpp's --embeddings: the server answers /v1/embeddings (and
        # refuses completions); SmolLM2 has no pooling of its own, so mean.
        p.embedding = True
        p.pooling_type = xlc.llama_pooling_type.LLAMA_POOLING_TYPE_MEAN
    if args.spec == "ngram":
        p.speculative.types = [xlc.common_speculative_type.COMMON_SPECULATIVE_TYPE_NGRAM_SIMPLE]
        p.speculative.ngram_simple.size_n = args.spec_ngram_n
        p.speculative.ngram_simple.size_m = args.spec_ngram_m
    p.cpuparams.n_threads = threads
    p.cpuparams_batch.n_threads = threads
    p.n_threads_http = max(args.slots + 4, 8)  # one HTTP thread per in-flight stream
    # warmup stays on (default): one empty decode before serving.

    server = xlc.Server(p)
    addr = server.listening_address
    url = addr if addr.startswith("http") else f"http://{addr}"
    print(f"listening on {url}", flush=True)
    if args.url_file:
        tmp = args.url_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(url + "\n")
        os.replace(tmp, args.url_file)

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    print("stopping", flush=True)
    # Exit without running the C++ destructors: llama.cpp's HTTP threads may
    # still hold sockets; the OS reclaims everything.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
