#!/usr/bin/env python3
"""Generate tests/data/chat_templates.cases, the chat template fixture.

Reference: transformers' own Jinja renderer (render_jinja_template, the code
behind tokenizer.apply_chat_template(..., tokenize=False)), i.e. a sandboxed
Jinja2 environment with trim_blocks=True and lstrip_blocks=True, bos_token /
eos_token passed in, strftime_now and raise_exception defined.

Inputs:
  * the real SmolLM2-135M-Instruct template, read from the GGUF
    ($PETREL_SMOLLM2 or ~/.local/share/petrel/models/...);
  * tests/data/chat_templates.json: real templates of other families, each
    with the source it was copied from and the family petrel should see.

Output format (tests/data/chat_templates.cases): a flat sequence of fields,
each written as

    <tag> <n>\\n<n bytes of value>\\n

so values may hold any bytes (newlines included) and a C reader needs only
sscanf and fread. Tags, in the order they appear:

    template        name; starts a template block
    source          where the template text comes from (informational)
    text            the template itself
    bos, eos        BOS/EOS token texts passed to the renderer
    kind            family petrel must detect: chatml llama3 llama2 zephyr unknown
    default_system  (optional) the system prompt the template inserts when the
                    conversation has none, found by rendering a user-only chat
    preamble        (optional) text a Llama 3.1+ template puts at the top of the
                    system turn; "{today}" stands for the date the template
                    takes from strftime_now
    render_date     (optional) the date_string given to the renderer for every
                    case of this template (templates whose default is today)
    case            name; starts a case of the current template
    add_generation_prompt  "0" or "1"
    role, content   one message (repeated)
    expect          the rendered prompt; ends the case
    error           instead of expect: the template raised this message

Run from the repository root: python3 tools/gen_chat_fixture.py
Never run in CI; its output is committed.
"""
import datetime
import json
import os
import sys

import jinja2
from gguf import GGUFReader
from transformers.utils.chat_template_utils import render_jinja_template

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data")
FIXED_DATE = "02 Jan 2025"  # date_string for templates that would read the clock


def smollm2_template():
    path = os.environ.get("PETREL_SMOLLM2") or os.path.expanduser(
        "~/.local/share/petrel/models/SmolLM2-135M-Instruct.Q4_1.gguf")
    r = GGUFReader(path)
    f = r.fields["tokenizer.chat_template"]
    text = bytes(f.parts[f.data[0]]).decode("utf-8")
    toks = r.fields["tokenizer.ggml.tokens"]

    def tok(key):
        fid = r.fields[key]
        i = int(fid.parts[fid.data[0]][0])
        return bytes(toks.parts[toks.data[i]]).decode("utf-8")

    return {"name": "smollm2", "kind": "chatml", "bos": tok("tokenizer.ggml.bos_token_id"),
            "eos": tok("tokenizer.ggml.eos_token_id"),
            "source": "SmolLM2-135M-Instruct.Q4_1.gguf tokenizer.chat_template", "template": text}


def render(t, msgs, add_gen, **extra):
    out, _ = render_jinja_template(conversations=[msgs], chat_template=t["template"],
                                   add_generation_prompt=add_gen, bos_token=t["bos"],
                                   eos_token=t["eos"], **extra)
    return out[0]


def u(text):
    return {"role": "user", "content": text}


def a(text):
    return {"role": "assistant", "content": text}


def s(text):
    return {"role": "system", "content": text}


CONVERSATIONS = [
    ("user-only", [u("Hello!")]),
    ("empty-content", [u("")]),
    ("system-user", [s("You are a terse assistant."), u("What is 2+2?")]),
    ("system-only", [s("Be brief.")]),
    ("multi-turn", [s("You are a helpful assistant"), u("Hello"), a("Hi there"),
                    u("Who are you"), a("   I am an assistant   "), u("Another question")]),
    ("multi-turn-no-system", [u("Hello"), a("Hi there"), u("Who are you")]),
    ("ends-with-assistant", [u("Name a colour."), a("Blue.")]),
    ("unicode-newlines", [s("Réponds en français.\nSois bref.\n"),
                          u("Héllo — 日本語 🙂\nsecond line\n\nthird"),
                          a("  Bonjour !\n  "),
                          u("\tpadded\u3000\u00a0 ")]),
    ("whitespace-only", [u(" \n\t "), a("\u2003ok\u2003")]),
    ("system-mid", [u("first"), s("Now answer in capitals."), u("second")]),
    ("think-history", [u("q1"), a("<think>\nreasoning one\n</think>\n\nanswer one"), u("q2")]),
    ("think-last", [u("q1"), a("<think>\nreasoning\n</think>\n\nfinal answer")]),
    ("think-last-plain", [u("q1"), a("plain answer")]),
    ("think-two-assistants", [u("q1"), a("<think>a</think>b"), a("\nc\n")]),
    ("think-nested", [u("q1"), a("<think>x<think>\ny\n</think>\nz</think>\n\nw")]),
    ("think-no-open-tag", [u("q1"), a("thinking...\n</think>\n\nanswer")]),
    ("tool-response-user", [u("q1"), a("<think>r</think>a1"), u("<tool_response>\nx\n</tool_response>")]),
    ("long", [u(f"question {i}") if i % 2 == 0 else a(f"answer {i}") for i in range(40)]),
    ("roles-not-alternating", [u("one"), u("two")]),
    ("assistant-first", [a("I start"), u("ok")]),
]

# Conversations a family does not take: petrel reports an error where the
# template would silently drop the message (Llama 2 skips a system message
# that is not first, if it lands on an odd position).
SKIP = {"llama2": {"system-mid"}}


def main():
    with open(os.path.join(DATA, "chat_templates.json"), encoding="utf-8") as f:
        doc = json.load(f)
    templates = [smollm2_template()] + doc["templates"]

    out = bytearray()

    def field(tag, value):
        b = value.encode("utf-8") if isinstance(value, str) else value
        out.extend(f"{tag} {len(b)}\n".encode())
        out.extend(b)
        out.extend(b"\n")

    n_cases = 0
    for t in templates:
        field("template", t["name"])
        field("source", t["source"])
        field("text", t["template"])
        field("bos", t["bos"])
        field("eos", t["eos"])
        field("kind", t["kind"])
        if t["kind"] == "unknown":
            continue
        clock = "strftime_now" in t["template"]
        extra = {"date_string": FIXED_DATE} if clock else {}

        # The default system prompt: what the template writes for a chat that
        # has none (ChatML family only; the others have no such branch).
        probe = render(t, [u("x")], False, **({"date_string": "{today}"} if clock else {}))
        if t["kind"] == "chatml":
            head = "<|im_start|>system\n"
            if probe.startswith(head):
                field("default_system", probe[len(head):probe.index("<|im_end|>")])
        if t["kind"] == "llama3":
            head = "<|start_header_id|>system<|end_header_id|>\n\n"
            i = probe.find(head)
            if i >= 0:
                pre = probe[i + len(head):probe.index("<|eot_id|>", i)]
                field("preamble", pre)
                if clock:  # check the placeholder really stands for today's date
                    today = datetime.datetime.now().strftime("%d %b %Y")
                    real = render(t, [u("x")], False)
                    assert real == probe.replace("{today}", today), "strftime_now default moved"
                    field("render_date", FIXED_DATE)

        for name, msgs in CONVERSATIONS:
            if name in SKIP.get(t["name"], ()) or name in SKIP.get(t["kind"], ()):
                continue
            for add_gen in (False, True):
                field("case", name)
                field("add_generation_prompt", "1" if add_gen else "0")
                for m in msgs:
                    field("role", m["role"])
                    field("content", m["content"])
                try:
                    field("expect", render(t, msgs, add_gen, **extra))
                except jinja2.exceptions.TemplateError as e:
                    field("error", str(e))
                n_cases += 1

    path = os.path.join(DATA, "chat_templates.cases")
    with open(path, "wb") as f:
        f.write(out)
    print(f"wrote {path}: {len(templates)} templates, {n_cases} cases, {len(out)} bytes",
          file=sys.stderr)


if __name__ == "__main__":
    main()
