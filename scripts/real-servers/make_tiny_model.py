#!/usr/bin/env python3
"""Write a tiny random-weight Llama model as a Hugging Face model directory.

Nothing is downloaded: the tokenizer is a byte-level BPE trained here on a
corpus generated from a fixed seed, and the weights are seeded normal noise.
The same pinned package versions give byte-identical files.

Output (in --out): config.json, generation_config.json, model.safetensors,
tokenizer.json, tokenizer_config.json, special_tokens_map.json, and
.qexp-complete once everything is written.

Needs: numpy, safetensors, tokenizers (the llama venv of install.sh).
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import importlib
import io
import json
import os
import random
import shutil
import sys
import tempfile

import numpy as np
from safetensors.numpy import save_file
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

SEED = 20240601
VOCAB_SIZE = 2048
HIDDEN = 128
LAYERS = 2
HEADS = 4
KV_HEADS = 2
HEAD_DIM = HIDDEN // HEADS
INTERMEDIATE = 256
MAX_POS = 131072
RMS_EPS = 1e-5
ROPE_THETA = 10000.0

PAD, IM_START, IM_END = "<|endoftext|>", "<|im_start|>", "<|im_end|>"
SPECIAL_TOKENS = [PAD, IM_START, IM_END]  # ids 0, 1, 2

# ChatML, as Qwen-style models ship it; parsed by both HF/vLLM (jinja2) and
# llama.cpp (its own jinja engine, and its built-in chatml detection).
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

WORDS = """
the of and to in is that for it as was with be by on not he this are or his
from at which but have an they you were her she there been one all we their
has would when if so no will more can out other into some them time these two
may then do first any my now such like our over man me even most made after
also did many before must through back years where much your way well down
should because each just those people how too little state good very make
world still own see men work long get here between both life being under
never day same another know while last might us great old year off come since
against go came right used take three himself few house use during without
again place around however home small found thought went say part once high
general upon school every does got united left number course war until always
away something fact though water less public put think almost hand enough far
took head yet government system better set told nothing night end why called
didn't eyes find going look asked later knew point next program city business
give group toward young days let room president side social given present
several order national possible rather second face per among form important
often things looking large fig big group data request token server model
latency throughput prefix cache batch stream queue client prompt output input
benchmark trial median percentile decode prefill context window seconds
""".split()

CODE_LINES = [
    "def main(argv=None):",
    "    return 0",
    "for i in range(10):",
    "    print(i, i * i)",
    "if __name__ == '__main__':",
    "class Point:",
    "    def __init__(self, x, y):",
    "        self.x = x",
    "fn main() { println!(\"hello\"); }",
    "let mut v: Vec<u32> = Vec::new();",
    "{\"role\": \"user\", \"content\": \"hi\"}",
    "curl -s http://127.0.0.1:8000/v1/models",
]


def corpus(rng: random.Random) -> list[str]:
    """About 1 MB of text: word salad with punctuation, numbers and code."""
    with contextlib.redirect_stdout(io.StringIO()):  # `import this` prints
        this = importlib.import_module("this")
    zen = codecs.decode(this.s, "rot13")  # a stable, local text
    lines = zen.splitlines() * 20
    punct = [".", ",", ";", ":", "?", "!", ""]
    for _ in range(12000):
        n = rng.randint(4, 18)
        words = [rng.choice(WORDS) for _ in range(n)]
        if rng.random() < 0.3:
            words[0] = words[0].capitalize()
        if rng.random() < 0.2:
            words.insert(rng.randrange(len(words)), str(rng.randint(0, 99999)))
        lines.append(" ".join(words) + rng.choice(punct))
        if rng.random() < 0.08:
            lines.append(rng.choice(CODE_LINES))
    return lines


def train_tokenizer(rng: random.Random) -> Tokenizer:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        min_frequency=2,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus(rng), trainer=trainer)
    return tok


def byte_level_decoder() -> dict[str, int]:
    """The inverse of GPT-2's bytes_to_unicode(): token character -> byte."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1))
    bs += list(range(ord("\xae"), ord("\xff") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def banned_ids(tok: Tokenizer) -> list[int]:
    """Tokens the model must never emit: special tokens (so EOS never comes),
    tokens that are not whole UTF-8 text (a lone byte >= 0x80 would make the
    servers hold back or emit U+FFFD, so a stream chunk would no longer be one
    token), and control characters other than tab and newline."""
    dec = byte_level_decoder()
    banned = []
    for piece, i in tok.get_vocab(with_added_tokens=True).items():
        if piece in SPECIAL_TOKENS:
            banned.append(i)
            continue
        raw = bytes(dec[c] for c in piece)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            banned.append(i)
            continue
        if any((ord(c) < 0x20 and c not in "\t\n") or ord(c) == 0x7F for c in text):
            banned.append(i)
    return sorted(banned)


def weights(vocab: int, banned: list[int]) -> dict[str, np.ndarray]:
    """Seeded normal weights, plus one deterministic trick: residual dimension
    0 carries a constant (embedding column 0 = 1, nothing writes to it), so
    after the final RMSNorm it is always large and positive, and lm_head
    column 0 = -2 for banned tokens pushes their logits ~20 below the rest.
    Sampling stays near-uniform over the allowed tokens."""
    gen = np.random.Generator(np.random.PCG64(SEED))

    def normal(*shape: int) -> np.ndarray:
        return (gen.standard_normal(shape, dtype=np.float32) * np.float32(0.02)).astype(np.float32)

    def ones(n: int) -> np.ndarray:
        return np.ones((n,), dtype=np.float32)

    embed = normal(vocab, HIDDEN)
    embed[:, 0] = 1.0
    t: dict[str, np.ndarray] = {"model.embed_tokens.weight": embed}
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        t[p + "input_layernorm.weight"] = ones(HIDDEN)
        t[p + "self_attn.q_proj.weight"] = normal(HEADS * HEAD_DIM, HIDDEN)
        t[p + "self_attn.k_proj.weight"] = normal(KV_HEADS * HEAD_DIM, HIDDEN)
        t[p + "self_attn.v_proj.weight"] = normal(KV_HEADS * HEAD_DIM, HIDDEN)
        o_proj = normal(HIDDEN, HEADS * HEAD_DIM)
        o_proj[0, :] = 0.0
        t[p + "self_attn.o_proj.weight"] = o_proj
        t[p + "post_attention_layernorm.weight"] = ones(HIDDEN)
        t[p + "mlp.gate_proj.weight"] = normal(INTERMEDIATE, HIDDEN)
        t[p + "mlp.up_proj.weight"] = normal(INTERMEDIATE, HIDDEN)
        down = normal(HIDDEN, INTERMEDIATE)
        down[0, :] = 0.0
        t[p + "mlp.down_proj.weight"] = down
    t["model.norm.weight"] = ones(HIDDEN)
    lm_head = normal(vocab, HIDDEN)
    lm_head[:, 0] = 0.0
    lm_head[banned, 0] = -2.0
    t["lm_head.weight"] = lm_head
    return t


def write_json(path: str, obj: object) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2, sort_keys=True, ensure_ascii=False)
        f.write("\n")


def build(out: str) -> None:
    rng = random.Random(SEED)
    tok = train_tokenizer(rng)
    vocab = tok.get_vocab_size(with_added_tokens=True)
    ids = {s: tok.token_to_id(s) for s in SPECIAL_TOKENS}
    assert ids == {PAD: 0, IM_START: 1, IM_END: 2}, ids

    tok.save(os.path.join(out, "tokenizer.json"))
    added = {
        str(i): {
            "content": s,
            "lstrip": False,
            "normalized": False,
            "rstrip": False,
            "single_word": False,
            "special": True,
        }
        for s, i in ids.items()
    }
    write_json(
        os.path.join(out, "tokenizer_config.json"),
        {
            "tokenizer_class": "PreTrainedTokenizerFast",
            "added_tokens_decoder": added,
            "additional_special_tokens": [IM_START, IM_END],
            "bos_token": None,
            "eos_token": IM_END,
            "pad_token": PAD,
            "unk_token": None,
            "add_bos_token": False,
            "add_eos_token": False,
            "add_prefix_space": False,
            "clean_up_tokenization_spaces": False,
            "model_max_length": MAX_POS,
            "chat_template": CHAT_TEMPLATE,
        },
    )
    write_json(
        os.path.join(out, "special_tokens_map.json"),
        {"additional_special_tokens": [IM_START, IM_END], "eos_token": IM_END, "pad_token": PAD},
    )
    write_json(
        os.path.join(out, "config.json"),
        {
            "architectures": ["LlamaForCausalLM"],
            "model_type": "llama",
            "hidden_size": HIDDEN,
            "intermediate_size": INTERMEDIATE,
            "num_hidden_layers": LAYERS,
            "num_attention_heads": HEADS,
            "num_key_value_heads": KV_HEADS,
            "head_dim": HEAD_DIM,
            "hidden_act": "silu",
            "max_position_embeddings": MAX_POS,
            "rms_norm_eps": RMS_EPS,
            "rope_theta": ROPE_THETA,
            "rope_scaling": None,
            "attention_bias": False,
            "attention_dropout": 0.0,
            "mlp_bias": False,
            "initializer_range": 0.02,
            "pretraining_tp": 1,
            "tie_word_embeddings": False,
            "use_cache": True,
            "vocab_size": vocab,
            "bos_token_id": ids[PAD],
            "eos_token_id": ids[IM_END],
            "pad_token_id": ids[PAD],
            "torch_dtype": "float32",
        },
    )
    write_json(
        os.path.join(out, "generation_config.json"),
        {"bos_token_id": ids[PAD], "eos_token_id": ids[IM_END], "pad_token_id": ids[PAD]},
    )
    st = os.path.join(out, "model.safetensors")
    save_file(weights(vocab, banned_ids(tok)), st, metadata={"format": "pt"})
    os.chmod(st, 0o644)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="model directory to create")
    ap.add_argument("--force", action="store_true", help="rebuild even if complete")
    args = ap.parse_args()
    out = os.path.abspath(args.out)
    if os.path.exists(os.path.join(out, ".qexp-complete")) and not args.force:
        print(f"tiny model already at {out}")
        return 0
    parent = os.path.dirname(out)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".tiny-model-", dir=parent)
    try:
        os.chmod(tmp, 0o755)
        build(tmp)
        with open(os.path.join(tmp, ".qexp-complete"), "w") as f:
            f.write("ok\n")
        if os.path.exists(out):
            shutil.rmtree(out)
        os.rename(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    print(f"tiny model written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
