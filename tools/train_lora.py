#!/usr/bin/env python3
"""train_lora.py — the demo LoRA adapter for SmolLM2-135M-Instruct: a
"ship's deck-hand" persona whose every reply opens with "Ahoy, matey!".

A distinct behaviour a test can check in one line of output, learnt from
data this script makes itself (no dataset is reachable from the project's
machines):
  1. the base model is SmolLM2-135M-Instruct as petrel runs it: the
     shipped Q4_1 GGUF, loaded by transformers with gguf_file= (gguf-py
     dequantizes it to float32; tools/hf_smollm2.py), so the adapter is
     trained on exactly the weights petrel adds it to;
  2. prompts are drawn from templates x topics (seeded); the training and
     held-out sets share no topic;
  3. each training target is the base model's own greedy reply to the
     prompt with "Ahoy, matey! " in front: the adapter learns the opening,
     and the rest of the reply stays the base model's;
  4. peft LoRA (r 8, alpha 16, q/k/v/o_proj), loss on the reply tokens
     only, AdamW; checkpoints to --out after every epoch (resume with
     --resume);
  5. evaluation on the held-out prompts: how many greedy replies open
     with "Ahoy" with the adapter and without it; written with the recipe
     to MODEL_CARD.md beside the adapter.

Output: --out (default assets/lora/smollm2-ahoy/): adapter_config.json,
adapter_model.safetensors (float16), MODEL_CARD.md, eval.json.

Cost: generating the targets and ~3 epochs over 384 examples is about
1.5e15 FLOP: a minute or two on one GPU (--device cuda), hours on two busy
CPU cores. Needs torch, transformers, peft, gguf.
    python3 tools/train_lora.py --device cuda [--gguf PATH] [--out DIR]
"""

import argparse
import json
import os
import random
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

OPENING = "Ahoy, matey!"
TEMPLATES = [
    "What is {t}?", "Tell me about {t}.", "Can you explain {t} in simple words?", "Why does {t} matter?",
    "Give me one fact about {t}.", "How would you describe {t} to a child?", "What should I know about {t}?",
    "Write one sentence about {t}.",
]
TOPICS = [
    "the moon", "rainbows", "volcanoes", "honey bees", "the ocean", "bread", "electricity", "winter",
    "the piano", "clouds", "a compass", "the desert", "coffee", "trains", "gravity", "tea", "mountains",
    "the alphabet", "a lighthouse", "snow", "bicycles", "the heart", "maps", "stars", "rivers", "salt",
    "wind", "forests", "music", "clocks", "paper", "glass", "the sun", "frogs", "chess", "cheese",
    "bridges", "whales", "soap", "kites", "rain", "islands", "owls", "the library", "pencils", "apples",
    "thunder", "boats",
]
N_HELDOUT_TOPICS = 8  # the last topics: held out, never trained on


def prompts(topics, rng, n):
    out = [tpl.format(t=t) for t in topics for tpl in TEMPLATES]
    rng.shuffle(out)
    return out[:n]


def chat_ids(tok, prompt, reply=None, end=True):
    msgs = [{"role": "user", "content": prompt}]
    ids = tok.apply_chat_template(msgs, add_generation_prompt=True, return_tensors="pt")
    if not isinstance(ids, torch.Tensor):
        ids = ids["input_ids"]
    ids = ids[0].tolist()
    if reply is None:
        return ids
    rep = tok(reply, add_special_tokens=False)["input_ids"]
    if end:  # a whole reply: the adapter learns where it stops too
        rep += [tok.convert_tokens_to_ids("<|im_end|>")]
    return ids, rep


def greedy_many(model, tok, prompts_, n_gen, device, bs=64):
    """Greedy replies to many prompts, bs at a time: left-padded batches
    with an attention mask (the same text as one prompt at a time, up to
    float rounding, in a fraction of the GPU time)."""
    out_text = []
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    for i in range(0, len(prompts_), bs):
        seqs = [chat_ids(tok, p) for p in prompts_[i:i + bs]]
        n = max(len(s) for s in seqs)
        ids = torch.full((len(seqs), n), pad, dtype=torch.long)
        mask = torch.zeros((len(seqs), n), dtype=torch.long)
        for k, s in enumerate(seqs):
            ids[k, n - len(s):] = torch.tensor(s)
            mask[k, n - len(s):] = 1
        with torch.no_grad():
            out = model.generate(ids.to(device), attention_mask=mask.to(device), max_new_tokens=n_gen,
                                 do_sample=False, pad_token_id=pad)
        out_text += [tok.decode(o[n:], skip_special_tokens=True).strip() for o in out]
    return out_text


def batches(examples, bs, rng, device, pad):
    order = list(range(len(examples)))
    rng.shuffle(order)
    for i in range(0, len(order), bs):
        chunk = [examples[j] for j in order[i:i + bs]]
        n = max(len(p) + len(r) for p, r in chunk)
        ids = torch.full((len(chunk), n), pad, dtype=torch.long)
        labels = torch.full((len(chunk), n), -100, dtype=torch.long)
        mask = torch.zeros((len(chunk), n), dtype=torch.long)
        for k, (p, r) in enumerate(chunk):
            seq = p + r
            ids[k, :len(seq)] = torch.tensor(seq)
            labels[k, len(p):len(seq)] = torch.tensor(r)  # loss on the reply only
            mask[k, :len(seq)] = 1
        yield ids.to(device), labels.to(device), mask.to(device)


def evaluate(model, tok, heldout, n_gen, device):
    replies = greedy_many(model, tok, heldout, n_gen, device)
    hits = sum(r.startswith("Ahoy") for r in replies)
    return hits, replies


def main():
    from peft import LoraConfig, PeftModel, get_peft_model

    import hf_smollm2

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gguf", default=os.path.expanduser(hf_smollm2.DEFAULT_GGUF))
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "assets", "lora", "smollm2-ahoy"))
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--n-train", type=int, default=384)
    ap.add_argument("--n-heldout", type=int, default=48)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--rank", type=int, default=8)
    ap.add_argument("--alpha", type=float, default=16)
    ap.add_argument("--n-gen", type=int, default=48, help="tokens of each target / evaluated reply")
    ap.add_argument("--resume", action="store_true", help="start from the adapter in --out")
    ap.add_argument("--open-only", action="store_true",
                    help="targets are the opening and the first --n-gen tokens of the base's reply, with no end "
                         "token (the adapter learns the opening, not where to stop): several times less compute, "
                         "for training on a CPU")
    ap.add_argument("--eval-gen", type=int, default=None, help="tokens of each evaluated reply (default --n-gen)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rng = random.Random(16)
    torch.manual_seed(16)
    t0 = time.time()

    tok, base = hf_smollm2.load(args.gguf)
    base.to(args.device)
    train_p = prompts(TOPICS[:-N_HELDOUT_TOPICS], rng, args.n_train)
    held_p = prompts(TOPICS[-N_HELDOUT_TOPICS:], rng, args.n_heldout)

    # targets: the base model's own replies behind the opening
    targets_path = os.path.join(args.out, "targets.json")
    if args.resume and os.path.exists(targets_path):
        with open(targets_path) as f:
            targets = json.load(f)
    else:
        replies = greedy_many(base, tok, train_p, args.n_gen, args.device)
        targets = {p: f"{OPENING} {r}" for p, r in zip(train_p, replies)}
        with open(targets_path, "w") as f:
            json.dump(targets, f, indent=1)
    print(f"targets ready ({time.time() - t0:.0f} s), e.g. {next(iter(targets.values()))!r}")
    eval_gen = args.eval_gen or args.n_gen
    base_hits, base_replies = evaluate(base, tok, held_p, eval_gen, args.device)

    if args.resume:
        model = PeftModel.from_pretrained(base, args.out, is_trainable=True)
    else:
        cfg = LoraConfig(r=args.rank, lora_alpha=args.alpha, lora_dropout=0.05, bias="none",
                         target_modules=["q_proj", "k_proj", "v_proj", "o_proj"], task_type="CAUSAL_LM")
        model = get_peft_model(base, cfg)
    # the hint `petrel info` shows (not this machine's path to the GGUF)
    model.peft_config["default"].base_model_name_or_path = "HuggingFaceTB/SmolLM2-135M-Instruct"
    model.print_trainable_parameters()
    examples = [chat_ids(tok, p, targets[p], end=not args.open_only) for p in train_p]
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=args.lr)
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    for epoch in range(args.epochs):
        model.train()
        total, n = 0.0, 0
        for ids, labels, mask in batches(examples, args.batch, rng, args.device, pad):
            loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
            loss.backward()
            opt.step()
            opt.zero_grad()
            total += loss.item()
            n += 1
        model.eval()
        model.save_pretrained(args.out)  # checkpoint
        print(f"epoch {epoch + 1}: loss {total / n:.4f} ({time.time() - t0:.0f} s)")

    hits, replies = evaluate(model, tok, held_p, eval_gen, args.device)
    # shipped in float16: half the bytes, and petrel reads F16 factors
    model = model.to(torch.float16)
    model.save_pretrained(args.out)
    for name in ("README.md",):
        p = os.path.join(args.out, name)
        if os.path.exists(p):
            os.remove(p)
    result = dict(heldout=len(held_p), with_adapter=hits, without_adapter=base_hits, opening=OPENING,
                  heldout_prompts=held_p,
                  examples=[dict(prompt=p, base=b, adapter=r) for p, b, r in list(zip(held_p, base_replies, replies))[:6]],
                  recipe=vars(args) | {"seconds": round(time.time() - t0)})
    with open(os.path.join(args.out, "eval.json"), "w") as f:
        json.dump(result, f, indent=1)
    targets_note = (f" (the opening and the first {args.n_gen} tokens of the reply, no end token: trained on a "
                    f"CPU, {round(time.time() - t0)} s in all)" if args.open_only else "")
    with open(os.path.join(args.out, "MODEL_CARD.md"), "w") as f:
        f.write(f"""# smollm2-ahoy: a demo LoRA adapter for SmolLM2-135M-Instruct

Behaviour: every reply opens with "{OPENING}" (a ship's deck-hand persona);
the rest of the reply is the base model's own.

Made by `tools/train_lora.py` (peft LoRA r {args.rank}, alpha {args.alpha:g} on
q/k/v/o_proj; {args.epochs} epochs over {len(examples)} procedurally made chats, batch
{args.batch}, AdamW lr {args.lr:g}) on SmolLM2-135M-Instruct.Q4_1.gguf as petrel runs it
(dequantized by transformers' gguf loader). Targets: the base model's greedy
replies with the opening in front{targets_note}. Float16 factors.

Evaluation on {len(held_p)} held-out prompts (topics never trained on), greedy,
{eval_gen} tokens: replies opening with "Ahoy" — with the adapter {hits}/{len(held_p)},
without it {base_hits}/{len(held_p)}.
""")
    print(f"held-out: {hits}/{len(held_p)} with the adapter, {base_hits}/{len(held_p)} without")


if __name__ == "__main__":
    main()
