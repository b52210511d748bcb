#!/usr/bin/env python3
"""Write the tiny HF Llama model (make_tiny_model.py) as an f32 GGUF for llama.cpp.

Writes the GGUF directly with the `gguf` package's GGUFWriter, the way
llama.cpp's convert_hf_to_gguf.py does for LlamaForCausalLM: llama arch
metadata, the byte-level BPE tokenizer as a `gpt2` vocab with merges and
`gpt-2` pre-tokenizer (the same regex as the HF ByteLevel pre-tokenizer, so
both servers count the same tokens), the ChatML template, and the tensors
under llama.cpp's names with q/k rows permuted for llama.cpp's rope layout.

Needs: numpy, safetensors, gguf (the llama venv of install.sh).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import gguf
import numpy as np
from safetensors.numpy import load_file


def permute(w: np.ndarray, n_head: int) -> np.ndarray:
    """HF's rotate-half q/k layout -> llama.cpp's interleaved one (as convert_hf_to_gguf)."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def tensor_map(cfg: dict, t: dict[str, np.ndarray]) -> list[tuple[str, np.ndarray]]:
    heads, kv_heads = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    out = [("token_embd.weight", t["model.embed_tokens.weight"])]
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        b = f"blk.{i}."
        out += [
            (b + "attn_norm.weight", t[p + "input_layernorm.weight"]),
            (b + "attn_q.weight", permute(t[p + "self_attn.q_proj.weight"], heads)),
            (b + "attn_k.weight", permute(t[p + "self_attn.k_proj.weight"], kv_heads)),
            (b + "attn_v.weight", t[p + "self_attn.v_proj.weight"]),
            (b + "attn_output.weight", t[p + "self_attn.o_proj.weight"]),
            (b + "ffn_norm.weight", t[p + "post_attention_layernorm.weight"]),
            (b + "ffn_gate.weight", t[p + "mlp.gate_proj.weight"]),
            (b + "ffn_up.weight", t[p + "mlp.up_proj.weight"]),
            (b + "ffn_down.weight", t[p + "mlp.down_proj.weight"]),
        ]
    out += [("output_norm.weight", t["model.norm.weight"]), ("output.weight", t["lm_head.weight"])]
    return out


def tokenizer_fields(model_dir: str) -> tuple[list[str], list[int], list[str], dict[int, str]]:
    with open(os.path.join(model_dir, "tokenizer.json"), encoding="utf-8") as f:
        tj = json.load(f)
    vocab: dict[str, int] = dict(tj["model"]["vocab"])
    special: dict[int, str] = {}
    for a in tj.get("added_tokens", []):
        vocab[a["content"]] = a["id"]
        if a.get("special"):
            special[a["id"]] = a["content"]
    n = max(vocab.values()) + 1
    tokens = [""] * n
    for s, i in vocab.items():
        tokens[i] = s
    if any(s == "" for s in tokens):
        raise SystemExit("tokenizer.json has holes in its ids")
    types = [
        int(gguf.TokenType.CONTROL if i in special else gguf.TokenType.NORMAL) for i in range(n)
    ]
    merges = [m if isinstance(m, str) else " ".join(m) for m in tj["model"]["merges"]]
    return tokens, types, merges, special


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="HF model dir from make_tiny_model.py")
    ap.add_argument("--out", required=True, help="GGUF file to write")
    args = ap.parse_args()

    with open(os.path.join(args.model, "config.json")) as f:
        cfg = json.load(f)
    with open(os.path.join(args.model, "tokenizer_config.json")) as f:
        tcfg = json.load(f)
    tokens, types, merges, _special = tokenizer_fields(args.model)
    if len(tokens) != cfg["vocab_size"]:
        raise SystemExit(f"tokenizer has {len(tokens)} tokens, config says {cfg['vocab_size']}")
    tensors = tensor_map(cfg, load_file(os.path.join(args.model, "model.safetensors")))

    tmp = args.out + ".tmp"
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    w = gguf.GGUFWriter(tmp, "llama")
    w.add_name("tiny-llama")
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_vocab_size(cfg["vocab_size"])
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_block_count(cfg["num_hidden_layers"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(cfg["num_attention_heads"])
    w.add_head_count_kv(cfg["num_key_value_heads"])
    w.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    w.add_rope_dimension_count(cfg["head_dim"])
    w.add_rope_freq_base(cfg["rope_theta"])
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-2")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(cfg["bos_token_id"])
    w.add_eos_token_id(cfg["eos_token_id"])
    w.add_eot_token_id(cfg["eos_token_id"])
    w.add_pad_token_id(cfg["pad_token_id"])
    w.add_add_bos_token(False)
    w.add_add_eos_token(False)
    w.add_chat_template(tcfg["chat_template"])
    for name, arr in tensors:
        w.add_tensor(name, np.ascontiguousarray(arr, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    os.replace(tmp, args.out)
    print(f"GGUF written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
