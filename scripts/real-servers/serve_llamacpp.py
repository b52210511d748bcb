#!/usr/bin/env python3
"""Run llama.cpp's own C++ HTTP server (embedded in the xllamacpp wheel) until signalled.

xllamacpp.Server(params) loads the model and starts llama.cpp's server on
params.hostnames/params.port in native threads; this process only keeps it
alive and writes the address it really listens on (port 0 = the kernel picks a
free port, so there is no race) to --url-file once it is up.

llama.cpp sizing: with kv_unified off, the KV cache of n_ctx tokens is split
evenly between the n_parallel slots, so n_ctx = per-slot context x slots.
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
