#!/usr/bin/env python3
"""gen_hf_tiny.py — tiny seeded Hugging Face checkpoints of the llama,
qwen2, qwen3 and gemma3 families, llama.cpp's conversion of each, and
transformers' logits, for `petrel convert`'s tests (tests/test_convert*).

For each family, under tests/data/hf-tiny/<family>/:
  config.json, model.safetensors (qwen3: sharded, with
  model.safetensors.index.json), generation_config.json, tokenizer.json,
  tokenizer_config.json (with a chat_template); gemma3 also tokenizer.model
  (a SentencePiece model, as Gemma ships: llama.cpp reads that one)
      written by transformers' save_pretrained from a float32 model whose
      weights are drawn from a seeded generator (scaled so the logits are
      not all near-ties)
  ref-f32.json, ref-f16.json
      what llama.cpp's convert_hf_to_gguf.py (llama-cpp-python 0.3.36's
      vendored copy) writes for --outtype f32 / f16: every metadata key
      with its type and value, every tensor's name, ne (ggml order), type
      and sha256 of its data bytes, in file order
  logits
      transformers' logits at every position of three prompts of seeded
      random token ids (lengths 1, 7, 33; tools/fixture_io.py's format,
      read by tests/logits_fixture.h)

Tokenizers. llama / qwen2 / qwen3: a byte-level BPE trained here with the
`tokenizers` library on a fixed text, with the pre-tokenizer of the real
family (Llama 3's Split regex; Qwen2's), its special tokens and post
processor. llama.cpp's converter names the pre-tokenizer by hashing the
tokenizer's output on a fixed text and refuses hashes it does not know;
a freshly trained vocabulary has a new hash, so this script patches
TextModel.get_vocab_base_pre to return the family's name ("llama-bpe",
"qwen2") — the name llama.cpp's hash table gives the real Llama 3 and Qwen2
tokenizers, whose pre-tokenizer ours copies. gemma3: a SentencePiece BPE
model with byte fallback (sentencepiece library; Gemma's special ids
pad 0, eos 1, bos 2, unk 3 and its turn markers), converted to
tokenizer.json by transformers' GemmaTokenizer.

Needs torch, transformers, tokenizers, sentencepiece, protobuf, safetensors,
numpy and the llama-cpp-python sdist (its vendor/llama.cpp; the path is
taken from $LLAMA_CPP_DIR, else ~/.cache/petrel-bench/llama-cpp-python-0.3.36/
vendor/llama.cpp). Never run in CI; the outputs are committed.

Run from the repository root:  python3 tools/gen_hf_tiny.py [FAMILY...]
"""

import hashlib
import json
import os
import shutil
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fixture_io  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
OUT = os.path.join(ROOT, "tests", "data", "hf-tiny")
LLAMA_CPP = os.environ.get("LLAMA_CPP_DIR", os.path.expanduser(
    "~/.cache/petrel-bench/llama-cpp-python-0.3.36/vendor/llama.cpp"))
PROMPT_LENGTHS = (1, 7, 33)
MIN_TOP1_GAP = 2e-3

TEXT = (
    "The quick brown fox jumps over the lazy dog. A tiny model has tiny weights, "
    "and the test reads them back. Petrel runs language models on phones, boards "
    "and desktops; it streams tokens to the terminal and shows how fast they come. "
    "What is the capital of France? Paris is the capital of France. 1234 + 5678 = 6912. "
    "Hello, world! hello there, how are you today? I am fine, thank you. "
    "It's 3.14 o'clock; we'll see.\n\n  Indented line\twith a tab. Ünïcödé café naïve 日本語.\n"
) * 4

LLAMA3_RE = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
             r"|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_RE = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
            r"|\s*[\r\n]+|\s+(?!\S)|\s+")

LLAMA3_TEMPLATE = (
    "{{- bos_token }}{%- for message in messages %}{{- '<|start_header_id|>' + message['role'] + "
    "'<|end_header_id|>\n\n' + message['content'] | trim + '<|eot_id|>' }}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{%- endif %}")
CHATML_TEMPLATE = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + "
    "'<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")
GEMMA_TEMPLATE = (
    "{{ bos_token }}{%- for message in messages -%}{%- if message['role'] == 'assistant' -%}"
    "{%- set role = 'model' -%}{%- else -%}{%- set role = message['role'] -%}{%- endif -%}"
    "{{ '<start_of_turn>' + role + '\n' + message['content'] | trim + '<end_of_turn>\n' }}"
    "{%- endfor -%}{%- if add_generation_prompt -%}{{ '<start_of_turn>model\n' }}{%- endif -%}")

FAMILIES = {
    # hidden 64, 4 query heads of 16, 2 KV heads (GQA 2:1), 2 layers
    "llama": dict(seed=101, layers=2, tied=False),
    "qwen2": dict(seed=102, layers=2, tied=True),
    "qwen3": dict(seed=103, layers=2, tied=False, head_dim=24, shard="40KB"),
    # gemma3: six layers so that llama.cpp's fixed pattern (every sixth
    # layer global, the others sliding) has both kinds; window 8 < 33
    "gemma3": dict(seed=104, layers=6, tied=True),
}


# ---- tokenizers ---------------------------------------------------------------

def bpe_tokenizer(family, tmp):
    """A byte-level BPE of ~320 tokens with the family's pre-tokenizer and
    specials; returns a transformers PreTrainedTokenizerFast."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    llama = family == "llama"
    specials = (["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>",
                 "<|eot_id|>"] if llama else ["<|endoftext|>", "<|im_start|>", "<|im_end|>"])
    tok = Tokenizer(models.BPE(ignore_merges=llama))
    if not llama:
        tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_RE if llama else QWEN2_RE), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=320, min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator([TEXT], trainer=trainer)
    tok.add_special_tokens(specials)
    if llama:
        bos = "<|begin_of_text|>"
        tok.post_processor = processors.Sequence([
            processors.ByteLevel(trim_offsets=False),
            processors.TemplateProcessing(single=f"{bos} $A", pair=f"{bos} $A {bos} $B",
                                          special_tokens=[(bos, tok.token_to_id(bos))])])
        fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=bos, eos_token="<|eot_id|>")
    else:
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
        fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    fast.chat_template = LLAMA3_TEMPLATE if llama else CHATML_TEMPLATE
    return fast


def spm_tokenizer(tmp):
    """Gemma-style SentencePiece BPE (byte fallback, no dummy prefix,
    identity normalization; ids pad 0, eos 1, bos 2, unk 3, mask 4 as in
    Gemma 3) and its transformers tokenizer."""
    import sentencepiece as spm
    from transformers import GemmaTokenizer

    text = os.path.join(tmp, "text.txt")
    with open(text, "w", encoding="utf-8") as f:
        f.write(TEXT)
    prefix = os.path.join(tmp, "spm")
    spm.SentencePieceTrainer.train(
        input=text, model_prefix=prefix, model_type="bpe", vocab_size=384, byte_fallback=True,
        character_coverage=1.0, normalization_rule_name="identity", add_dummy_prefix=False,
        remove_extra_whitespaces=False, split_digits=True, allow_whitespace_only_pieces=True,
        pad_id=0, eos_id=1, bos_id=2, unk_id=3, pad_piece="<pad>", eos_piece="<eos>", bos_piece="<bos>",
        unk_piece="<unk>", user_defined_symbols=["<mask>", "<start_of_turn>", "<end_of_turn>"],
        num_threads=1, minloglevel=2)
    # transformers 5 builds the tokenizers-backed tokenizer from a folder
    # holding tokenizer.model (SentencePieceExtractor)
    sp_dir = os.path.join(tmp, "sp")
    os.makedirs(sp_dir)
    shutil.copy(prefix + ".model", os.path.join(sp_dir, "tokenizer.model"))
    fast = GemmaTokenizer.from_pretrained(sp_dir, add_bos_token=True, add_eos_token=False)
    fast.chat_template = GEMMA_TEMPLATE
    return fast, prefix + ".model"


# ---- models -------------------------------------------------------------------

def make_config(family, spec, n_vocab, tok):
    import transformers as tf
    common = dict(vocab_size=n_vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=spec["layers"],
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                  tie_word_embeddings=spec["tied"], torch_dtype="float32")
    ids = dict(bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    if family == "llama":
        return tf.LlamaConfig(**common, **ids, rms_norm_eps=1e-5, rope_theta=500000.0, head_dim=16)
    if family == "qwen2":
        return tf.Qwen2Config(**common, **ids, rms_norm_eps=1e-6, rope_theta=1000000.0)
    if family == "qwen3":
        return tf.Qwen3Config(**common, **ids, rms_norm_eps=1e-6, rope_theta=1000000.0, head_dim=spec["head_dim"])
    cfg = tf.Gemma3TextConfig(**common, **ids, rms_norm_eps=1e-6, head_dim=16, query_pre_attn_scalar=16,
                              sliding_window=8, rope_theta=1000000.0, rope_local_base_freq=10000.0,
                              final_logit_softcapping=None, attn_logit_softcapping=None,
                              hidden_activation="gelu_pytorch_tanh")
    cfg.architectures = ["Gemma3ForCausalLM"]
    return cfg


def make_model(family, cfg, seed):
    import transformers as tf
    cls = {"llama": tf.LlamaForCausalLM, "qwen2": tf.Qwen2ForCausalLM, "qwen3": tf.Qwen3ForCausalLM,
           "gemma3": tf.Gemma3ForCausalLM}[family]
    torch.manual_seed(seed)
    model = cls(cfg).float().eval()
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                # gemma stores the norm weight as an offset from 1
                base = 0.0 if family == "gemma3" else 1.0
                p.copy_(base + 0.1 * torch.randn(p.shape, generator=g))
            elif name.endswith(".bias"):
                p.copy_(0.05 * torch.randn(p.shape, generator=g))
            elif "embed_tokens" in name:
                scale = 0.125 if family == "gemma3" else 1.0  # gemma multiplies by sqrt(64)
                p.copy_(scale * torch.randn(p.shape, generator=g))
            else:
                p.copy_(torch.randn(p.shape, generator=g) / np.sqrt(p.shape[-1]))
    return model


def pick_prompts(model, n_vocab, seed):
    rng = np.random.default_rng(seed)
    prompts = []
    for n in PROMPT_LENGTHS:
        for _ in range(200):
            toks = rng.integers(0, n_vocab, size=n).tolist()
            with torch.no_grad():
                logits = model(torch.tensor([toks])).logits[0].float().numpy()
            _, gap = fixture_io.top1_and_gap(logits)
            if gap.min() >= MIN_TOP1_GAP:
                break
        else:
            raise SystemExit("no prompt without a near-tie")
        prompts.append(dict(text="", tokens=toks, logits=logits, full_pos=list(range(n))))
    return prompts


# ---- llama.cpp's converter and its reference --------------------------------

PRE_NAMES = {"llama": "llama-bpe", "qwen2": "qwen2", "qwen3": "qwen2"}


def run_converter(folder, out, outtype, family):
    sys.path.insert(0, LLAMA_CPP)
    sys.path.insert(1, os.path.join(LLAMA_CPP, "gguf-py"))
    import convert_hf_to_gguf as conv
    from conversion import base
    # the hash lookup patched: see the module docstring
    base.TextModel.get_vocab_base_pre = lambda self, tokenizer: PRE_NAMES[family]
    argv = sys.argv
    sys.argv = ["convert_hf_to_gguf.py", folder, "--outfile", out, "--outtype", outtype]
    try:
        conv.main()
    finally:
        sys.argv = argv


def json_value(field):
    import gguf
    t = field.types[0]
    if t == gguf.GGUFValueType.ARRAY:
        et = field.types[1] if len(field.types) > 1 else gguf.GGUFValueType.UINT32
        vals = [field.parts[i] for i in field.data]
        if et == gguf.GGUFValueType.STRING:
            return et.name, [bytes(v).decode("utf-8", "surrogateescape") for v in vals]
        return et.name, [v.tolist()[0] for v in vals]
    v = field.parts[field.data[0]]
    if t == gguf.GGUFValueType.STRING:
        return t.name, bytes(v).decode("utf-8")
    return t.name, v.tolist()[0]


def reference(path):
    import gguf
    r = gguf.GGUFReader(path)
    kv = []
    for name, field in r.fields.items():
        if name.startswith("GGUF."):
            continue
        typ, val = json_value(field)
        entry = {"key": name, "type": field.types[0].name, "value": val}
        if field.types[0] == gguf.GGUFValueType.ARRAY:
            entry["elem_type"] = typ
        kv.append(entry)
    tensors = [{"name": t.name, "ne": [int(x) for x in t.shape], "type": t.tensor_type.name,
                "sha256": hashlib.sha256(bytes(t.data.tobytes())).hexdigest()} for t in r.tensors]
    return {"kv": kv, "tensors": tensors}


def build(family):
    spec = FAMILIES[family]
    folder = os.path.join(OUT, family)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    with tempfile.TemporaryDirectory() as tmp:
        if family == "gemma3":
            tok, spm_path = spm_tokenizer(tmp)
        else:
            tok, spm_path = bpe_tokenizer(family, tmp), None
        n_vocab = len(tok)
        cfg = make_config(family, spec, n_vocab, tok)
        model = make_model(family, cfg, spec["seed"])
        model.generation_config.do_sample = False
        model.save_pretrained(folder, safe_serialization=True, max_shard_size=spec.get("shard", "1GB"))
        tok.save_pretrained(folder)
        if spm_path:
            shutil.copy(spm_path, os.path.join(folder, "tokenizer.model"))
        # only what a model repo carries
        for extra in ("special_tokens_map.json", "chat_template.jinja"):
            p = os.path.join(folder, extra)
            if os.path.exists(p) and extra == "chat_template.jinja":
                # keep the template in tokenizer_config.json, as most repos do
                with open(os.path.join(folder, "tokenizer_config.json"), encoding="utf-8") as f:
                    tc = json.load(f)
                with open(p, encoding="utf-8") as f:
                    tc["chat_template"] = f.read()
                with open(os.path.join(folder, "tokenizer_config.json"), "w", encoding="utf-8") as f:
                    json.dump(tc, f, indent=2, ensure_ascii=False)
                os.remove(p)

        prompts = pick_prompts(model, n_vocab, spec["seed"])
        fixture_io.write_logits(os.path.join(folder, "logits"), n_vocab, prompts)

        for outtype in ("f32", "f16"):
            out = os.path.join(tmp, f"{family}-{outtype}.gguf")
            run_converter(folder, out, outtype, family)
            with open(os.path.join(folder, f"ref-{outtype}.json"), "w", encoding="utf-8") as f:
                json.dump(reference(out), f, indent=0, ensure_ascii=False)
                f.write("\n")
    print(f"{family}: vocab {n_vocab}, files {sorted(os.listdir(folder))}")


def main():
    fams = sys.argv[1:] or list(FAMILIES)
    for fam in fams:
        build(fam)


if __name__ == "__main__":
    main()
