#!/usr/bin/env python3
"""Check `petrel bench -o json|jsonl` output against llama-bench's format.

usage: check_bench_json.py FILE [--jsonl] --reps R --tests pp8,tg4 [--field k=v ...]

FILE holds what petrel bench printed on stdout. Checks, for llama-bench
compatibility (field list and types from tools/llama-bench/llama-bench.cpp of
the llama.cpp pinned in bench/build_llamacpp.sh):
  - the document is a JSON array (--jsonl: one JSON object per line);
  - every object has exactly llama-bench's fields, in its order, with its
    JSON types (strings, integers, booleans, floats), plus samples_ns and
    samples_ts arrays of R numbers each;
  - the tests are the ones listed, in order (names built from n_prompt,
    n_gen and n_depth the way llama-bench names them);
  - the numbers agree with each other: samples_ts[i] = (n_prompt + n_gen) /
    samples_ns[i] seconds, avg_ts and avg_ns are the means, stddev_ts and
    stddev_ns the sample standard deviations, everything finite and > 0;
  - each --field k=v holds (compared as text, JSON booleans as true/false).
Prints "N passed, 0 failed" and exits 0, or prints every failure and exits 1.
Standard library only.
"""
import argparse
import json
import math
import statistics
import sys

# llama-bench's test::get_fields() and get_field_type(), in order.
INT, FLOAT, BOOL, STR = "int", "float", "bool", "str"
FIELDS = [
    ("build_commit", STR), ("build_number", INT), ("cpu_info", STR), ("gpu_info", STR), ("backends", STR),
    ("model_filename", STR), ("model_type", STR), ("model_size", INT), ("model_n_params", INT),
    ("n_batch", INT), ("n_ubatch", INT), ("n_threads", INT), ("cpu_mask", STR), ("cpu_strict", BOOL),
    ("poll", INT), ("type_k", STR), ("type_v", STR), ("n_gpu_layers", INT), ("n_cpu_moe", INT),
    ("split_mode", STR), ("main_gpu", INT), ("no_kv_offload", BOOL), ("flash_attn", INT), ("devices", STR),
    ("tensor_split", STR), ("tensor_buft_overrides", STR), ("load_mode", STR), ("lazy_mode", STR),
    ("embeddings", BOOL), ("no_op_offload", INT), ("no_host", BOOL), ("repack", BOOL), ("fit_target", INT),
    ("fit_min_ctx", INT), ("n_prompt", INT), ("n_gen", INT), ("n_depth", INT), ("test_time", STR),
    ("avg_ns", INT), ("stddev_ns", INT), ("avg_ts", FLOAT), ("stddev_ts", FLOAT),
]


def type_ok(v, kind):
    if kind == INT:
        return isinstance(v, int) and not isinstance(v, bool)
    if kind == FLOAT:
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    if kind == BOOL:
        return isinstance(v, bool)
    return isinstance(v, str)


def test_name(o):
    p, g, d = o["n_prompt"], o["n_gen"], o["n_depth"]
    name = f"pp{p}" if g == 0 else f"tg{g}" if p == 0 else f"pp{p}+tg{g}"
    return name + (f" @ d{d}" if d > 0 else "")


def close(a, b, rel=2e-3, abs_=1e-6):
    return abs(a - b) <= max(abs_, rel * max(abs(a), abs(b)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--jsonl", action="store_true")
    ap.add_argument("--reps", type=int, required=True)
    ap.add_argument("--tests", required=True, help="comma list of expected test names, in order")
    ap.add_argument("--field", action="append", default=[], help="k=v that every object must hold")
    a = ap.parse_args()

    passed, fails = 0, []

    def check(cond, what):
        nonlocal passed
        if cond:
            passed += 1
        else:
            fails.append(what)
        return cond

    text = open(a.file, encoding="utf-8").read()
    try:
        if a.jsonl:
            lines = [ln for ln in text.splitlines() if ln.strip()]
            check(len(lines) == len(text.strip().splitlines()), "jsonl has blank lines in between")
            objs = [json.loads(ln) for ln in lines]
        else:
            objs = json.loads(text)
            check(isinstance(objs, list), "top level is not an array")
    except json.JSONDecodeError as e:
        print(f"FAIL: not valid JSON: {e}")
        print("0 passed, 1 failed")
        return 1

    want_tests = a.tests.split(",")
    check([test_name(o) if isinstance(o, dict) and all(k in o for k in ("n_prompt", "n_gen", "n_depth")) else "?"
           for o in objs] == want_tests,
          f"tests {[test_name(o) for o in objs if isinstance(o, dict)]} != {want_tests}")
    want_keys = [k for k, _ in FIELDS] + ["samples_ns", "samples_ts"]
    for i, o in enumerate(objs):
        if not check(isinstance(o, dict), f"[{i}] is not an object"):
            continue
        check(list(o.keys()) == want_keys, f"[{i}] keys differ from llama-bench's: "
              f"missing {[k for k in want_keys if k not in o]}, extra {[k for k in o if k not in want_keys]}")
        for k, kind in FIELDS:
            if k in o:
                check(type_ok(o[k], kind), f"[{i}] {k}={o[k]!r} is not a JSON {kind}")
        ns, ts = o.get("samples_ns", []), o.get("samples_ts", [])
        check(len(ns) == a.reps and len(ts) == a.reps, f"[{i}] {len(ns)}/{len(ts)} samples, want {a.reps}")
        if not (ns and len(ns) == len(ts)):
            continue
        n_tok = o["n_prompt"] + o["n_gen"]
        check(all(isinstance(x, int) and x > 0 for x in ns), f"[{i}] samples_ns not positive integers: {ns}")
        check(all(math.isfinite(x) and x > 0 for x in ts), f"[{i}] samples_ts not positive: {ts}")
        check(all(close(t, n_tok * 1e9 / n) for t, n in zip(ts, ns)),
              f"[{i}] samples_ts {ts} != {n_tok} tokens / samples_ns {ns}")
        # samples_ts are printed with 6 significant digits (C++ ostream's
        # default, as llama-bench does) while avg_ts and stddev_ts are computed
        # from the unrounded speeds: recompute those from the exact samples_ns,
        # never from the rounded samples_ts (whose rounding error, up to
        # 5e-6 relative per sample, can exceed a small stddev's tolerance).
        ts = [n_tok * 1e9 / n for n in ns]
        check(close(o["avg_ts"], statistics.fmean(ts)), f"[{i}] avg_ts {o['avg_ts']} != mean {statistics.fmean(ts)}")
        check(close(o["avg_ns"], statistics.fmean(ns), abs_=2), f"[{i}] avg_ns {o['avg_ns']} != mean")
        sd_ts = statistics.stdev(ts) if len(ts) > 1 else 0.0
        sd_ns = statistics.stdev(ns) if len(ns) > 1 else 0.0
        check(close(o["stddev_ts"], sd_ts, abs_=2e-6), f"[{i}] stddev_ts {o['stddev_ts']} != {sd_ts}")
        check(close(o["stddev_ns"], sd_ns, abs_=2), f"[{i}] stddev_ns {o['stddev_ns']} != {sd_ns}")
        check(o["avg_ts"] > 0 and math.isfinite(o["avg_ts"]), f"[{i}] avg_ts {o['avg_ts']} not > 0")
        check(o["model_size"] > 0 and o["model_n_params"] > 0, f"[{i}] model size/params not > 0")
        check(o["n_threads"] >= 1, f"[{i}] n_threads {o['n_threads']}")
        check(o["backends"] == "CPU", f"[{i}] backends {o['backends']!r}")
        check(len(o["test_time"]) == 20 and o["test_time"].endswith("Z") and o["test_time"][10] == "T",
              f"[{i}] test_time {o['test_time']!r} is not RFC 3339 UTC")
        for kv in a.field:
            k, _, v = kv.partition("=")
            got = o.get(k)
            got_s = ("true" if got else "false") if isinstance(got, bool) else str(got)
            check(got_s == v, f"[{i}] {k} = {got_s!r}, want {v!r}")

    for f in fails:
        print("FAIL: " + f)
    print(f"{passed} passed, {len(fails)} failed")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
