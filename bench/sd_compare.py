#!/usr/bin/env python3
"""sd_compare.py — `petrel imagine` against stable-diffusion.cpp's sd-cli on the
same SD1.5-shaped checkpoint, prompt, threads and machine (issue 11).

usage: bash bench/sd_run.sh [options]     (the same as python3 bench/sd_compare.py)
       python3 bench/sd_compare.py --parse sdcpp|petrel FILE   (parse one saved log; for tests)
       python3 bench/sd_compare.py --macs [SIZE]               (the UNet's multiply-adds)

One command from a clean checkout:
  1. builds petrel (Release, -DPETREL_NATIVE=ON, in build-bench/) unless
     --petrel is given; stable-diffusion.cpp's sd-cli from the pinned
     stable-diffusion-cpp-python sdist (bench/build_sdcpp.sh, cached) unless
     --sd-cli is given; bench/machine_probe.c;
  2. gets the inputs, all cached in ~/.cache/petrel-bench/models: the random
     SD1.5-shaped F16 single-file LDM checkpoint and a random TAESD
     (tools/make_sd15_random.py), and OpenAI's CLIP vocabulary as a tokenizer
     folder (bench/sdcpp_vocab.py, from sd.cpp's own sources, so both
     programs tokenize the prompt the same way; petrel needs it because a
     single-file checkpoint carries no tokenizer);
  3. per round and image size, runs each configuration of each program
     ALTERNATING petrel / sd.cpp (the order flips every round so drift in
     the machine's load hits both alike):
         f16    weights as stored (F16)              sd-cli            | petrel imagine
         q8_0   8-bit weights                        sd-cli --type q8_0 | petrel imagine --weights q8_0
         taesd  F16, decoded by TAESD                sd-cli --taesd T   | petrel imagine --taesd T
     all with the same prompt, -t THREADS, CFG 7.5, Euler, 4 steps, seed 42.
     sd.cpp's q8_0 quantizes its linear weights only (its convolutions stay
     F16); petrel's quantizes linear AND convolution weights. Before each run
     the harness waits (up to --quiet-wait s) for the load average to drop to
     the core count and marks runs that start above it;
  4. per run: seconds per sampling step (the sampler loop's seconds / steps,
     two UNet passes or one batched pass of 2 per step for CFG), text-encode
     seconds (prompt and empty negative), decode seconds (VAE in the f16 and
     q8_0 runs, TAESD in the taesd runs), peak RSS of the whole process
     (GNU time -v: "Maximum resident set size"), wall time and CPU share.
     The stage timings are each program's own: sd-cli -v prints
       "get_learned_condition completed, taking 0.53s"
       "sampling completed, taking 14.80s"
       "decode_first_stage completed, taking 7.91s"
     and petrel imagine prints at the end
       "text: 0.412 s" / "sample: 4 steps in 6.1 s (1.52 s/step)" / "decode: 3.2 s (vae)";
  5. prints a table (mean +- sd over rounds, ratios petrel speed / sd.cpp
     speed = sd.cpp seconds / petrel seconds, RSS ratio petrel / sd.cpp F16)
     and writes it to bench/RESULTS.md (its image part, below the LLM
     sections; a run on a new CPU keeps the sections of other CPUs) with the
     command, machine, issue-11 targets marked met / not met, and the UNet's
     int8 share of the machine's measured int8 peak.

The UNet's int8 share: unet_macs() counts the multiply-adds of one UNet pass
from the SD1.5 config (convolutions k*k*c_in*c_out*h_out*w_out, linear
layers tokens*in*out, attention QK^T and PV tokens_q*tokens_kv*channels
each; norms, activations and the sampler are not counted); a step is two
passes (CFG). share = 2 * 2 * MACs / (s/step) / measured int8 rate, where the
rate is machine_probe int8 (a vpdpbusd / vpmaddubsw loop on THREADS threads,
over CPU time). It says how much of the machine's int8 rate the step uses,
whatever the kernels (the f16 run's products need not be int8 at all).

Standard library only (the checkpoint generator needs numpy).
"""
import argparse
import datetime
import json
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.environ.get("PETREL_BENCH_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "petrel-bench")
MODELS = os.path.join(CACHE, "models")
CKPT = os.path.join(MODELS, "sd15-random-f16.safetensors")
TAESD = os.path.join(MODELS, "taesd-random.safetensors")
PROMPT = "a photograph of an astronaut riding a horse on the moon, highly detailed"

# issue 11's targets
TARGET_STEP = 2.0     # petrel s/step at least 2x faster than sd.cpp's (F16 runs), at every size
TARGET_VAE = 2.0      # VAE decode at least 2x faster
TARGET_RSS = 0.6      # petrel's peak RSS at most 0.6x sd.cpp's F16 run

CONFIGS = ["f16", "q8_0", "taesd"]
IMAGE_HEAD = "# petrel imagine vs stable-diffusion.cpp: CPU speed (issue 11)"

# SD 1.5's UNet (diffusers' unet/config.json): what unet_macs() counts.
SD15_UNET = {
    "in_channels": 4, "out_channels": 4,
    "channels": [320, 640, 1280, 1280],
    "cross_attn": [True, True, True, False],
    "layers_per_block": 2,
    "transformer_depth": 1,
    "cross_dim": 768,
    "context_tokens": 77,
    "time_embed_dim": 1280,
}


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] sd_compare: {msg}", file=sys.stderr, flush=True)


def die(msg):
    log("error: " + msg)
    sys.exit(1)


def sh(cmd, **kw):
    log("$ " + " ".join(shlex.quote(c) for c in cmd))
    return subprocess.run(cmd, check=True, **kw)


# ---- the UNet's work per pass ------------------------------------------------------

def unet_macs(cfg, height, width):
    """Multiply-adds of one UNet pass (batch 1) on a height x width image
    (latent height/8 x width/8), by kind: {"conv", "linear", "attn",
    "total"}, and the parameter count of the layers visited ("params", a
    cross-check against the checkpoint: SD 1.5's UNet has 859.5 M). Walks
    diffusers' UNet2DConditionModel: conv_in, down levels (ResNets with
    spatial transformers where cross_attn, a stride-2 conv except the last),
    mid (ResNet, transformer, ResNet), up levels (layers+1 ResNets on the
    concatenated skips, transformers, nearest 2x + conv except the last),
    conv_out; time embedding MLP and each ResNet's time projection."""
    c = cfg
    h, w = height // 8, width // 8
    acc = {"conv": 0, "linear": 0, "attn": 0, "params": 0}
    temb = c["time_embed_dim"]
    ctx, cdim = c["context_tokens"], c["cross_dim"]

    def conv(k, cin, cout, ho, wo):
        acc["conv"] += k * k * cin * cout * ho * wo
        acc["params"] += k * k * cin * cout + cout

    def linear(tokens, fin, fout, bias=True):
        acc["linear"] += tokens * fin * fout
        acc["params"] += fin * fout + (fout if bias else 0)

    def norm(ch):
        acc["params"] += 2 * ch

    def resnet(cin, cout, hh, ww):
        norm(cin)
        conv(3, cin, cout, hh, ww)
        linear(1, temb, cout)
        norm(cout)
        conv(3, cout, cout, hh, ww)
        if cin != cout:
            conv(1, cin, cout, hh, ww)

    def transformer(ch, hh, ww):
        n = hh * ww
        norm(ch)
        conv(1, ch, ch, hh, ww)                     # proj_in (a 1x1 conv in SD 1.x)
        for _ in range(c["transformer_depth"]):
            norm(ch)                                  # self-attention
            for _ in range(3):
                linear(n, ch, ch, bias=False)         # q, k, v
            acc["attn"] += 2 * n * n * ch             # QK^T and PV over all heads
            linear(n, ch, ch)                         # out
            norm(ch)                                  # cross-attention
            linear(n, ch, ch, bias=False)             # q
            linear(ctx, cdim, ch, bias=False)         # k
            linear(ctx, cdim, ch, bias=False)         # v
            acc["attn"] += 2 * n * ctx * ch
            linear(n, ch, ch)
            norm(ch)                                  # GEGLU feed-forward
            linear(n, ch, 8 * ch)
            linear(n, 4 * ch, ch)
        conv(1, ch, ch, hh, ww)                       # proj_out

    ch0 = c["channels"][0]
    linear(1, ch0, temb)                              # time embedding MLP
    linear(1, temb, temb)
    conv(3, c["in_channels"], ch0, h, w)
    skips = [ch0]
    cur, hh, ww = ch0, h, w
    nl = len(c["channels"])
    for i, ch in enumerate(c["channels"]):
        for _ in range(c["layers_per_block"]):
            resnet(cur, ch, hh, ww)
            cur = ch
            if c["cross_attn"][i]:
                transformer(ch, hh, ww)
            skips.append(cur)
        if i < nl - 1:
            hh, ww = (hh + 1) // 2, (ww + 1) // 2
            conv(3, cur, cur, hh, ww)                 # stride 2: output size
            skips.append(cur)
    resnet(cur, cur, hh, ww)
    transformer(cur, hh, ww)
    resnet(cur, cur, hh, ww)
    for i in reversed(range(nl)):
        ch = c["channels"][i]
        for _ in range(c["layers_per_block"] + 1):
            resnet(cur + skips.pop(), ch, hh, ww)
            cur = ch
            if c["cross_attn"][i]:
                transformer(ch, hh, ww)
        if i > 0:
            hh, ww = hh * 2, ww * 2
            conv(3, cur, cur, hh, ww)                 # after nearest 2x up-sampling
    norm(cur)
    conv(3, cur, c["out_channels"], hh, ww)
    acc["total"] = acc["conv"] + acc["linear"] + acc["attn"]
    return acc


# ---- building and inputs -------------------------------------------------------------

def build_petrel(build_dir, jobs):
    sh(["cmake", "-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release", "-DPETREL_NATIVE=ON"],
       stdout=subprocess.DEVNULL)
    sh(["cmake", "--build", build_dir, "--target", "petrel", "-j", str(jobs)], stdout=subprocess.DEVNULL)
    return os.path.join(build_dir, "petrel")


def build_sdcpp():
    out = sh(["bash", os.path.join(ROOT, "bench", "build_sdcpp.sh")], stdout=subprocess.PIPE, text=True)
    return out.stdout.strip().splitlines()[-1]


def build_probe(build_dir):
    src = os.path.join(ROOT, "bench", "machine_probe.c")
    exe = os.path.join(build_dir, "machine_probe")
    os.makedirs(build_dir, exist_ok=True)
    if not os.path.exists(exe) or os.path.getmtime(exe) < os.path.getmtime(src):
        sh(["cc", "-O3", "-march=native", "-pthread", src, "-o", exe])
    return exe


def ensure_gnu_time():
    """GNU time (Debian's `time` package) for -v's peak RSS; installed with
    apt-get when missing, as tools/setup.sh installs the build's packages."""
    if os.path.exists("/usr/bin/time"):
        return "/usr/bin/time"
    if shutil.which("apt-get"):
        sudo = [] if os.geteuid() == 0 else ["sudo"]
        sh([*sudo, "apt-get", "install", "-y", "-qq", "time"], stdout=subprocess.DEVNULL)
    if not os.path.exists("/usr/bin/time"):
        die("GNU time (/usr/bin/time) is missing: install Debian's `time` package")
    return "/usr/bin/time"


def ensure_py_deps():
    try:
        import numpy  # noqa: F401
    except ImportError:
        sh([sys.executable, "-m", "pip", "install", "--quiet", "numpy"])


def get_inputs(a):
    """(checkpoint, taesd, tokenizer folder), made once into the cache."""
    ckpt, taesd = a.model or CKPT, a.taesd or TAESD
    if not (os.path.exists(ckpt) and os.path.exists(taesd)):
        gen = os.path.join(ROOT, "tools", "make_sd15_random.py")
        if not os.path.exists(gen):
            die("tools/make_sd15_random.py is missing (branch sd-weights): pass --model and --taesd")
        ensure_py_deps()
        os.makedirs(os.path.dirname(os.path.abspath(ckpt)), exist_ok=True)
        os.makedirs(os.path.dirname(os.path.abspath(taesd)), exist_ok=True)
        # make_sd15_random.py OUT.safetensors [--taesd OUT_TAESD.safetensors]
        if not os.path.exists(ckpt):
            sh([sys.executable, gen, ckpt, *([] if os.path.exists(taesd) else ["--taesd", taesd])])
        else:
            with tempfile.TemporaryDirectory(dir=os.path.dirname(os.path.abspath(taesd))) as td:
                sh([sys.executable, gen, os.path.join(td, "unused.safetensors"), "--taesd", taesd])
    tok = a.tokenizer or sh([sys.executable, os.path.join(ROOT, "bench", "sdcpp_vocab.py")],
                            stdout=subprocess.PIPE, text=True).stdout.strip().splitlines()[-1]
    return ckpt, taesd, tok


# ---- parsing each program's output ---------------------------------------------------

def _last_float(pat, text):
    m = re.findall(pat, text, re.M)
    return float(m[-1]) if m else None


def parse_sdcpp(text, steps):
    """Stage seconds from sd-cli -v's log (its LOG_INFO lines)."""
    r = {
        "text_s": _last_float(r"get_learned_condition completed, taking ([0-9.]+)\s*s", text),
        "sample_s": _last_float(r"sampling completed, taking ([0-9.]+)\s*s", text),
        "decode_s": _last_float(r"decode_first_stage completed, taking ([0-9.]+)\s*s", text),
        "load_s": _last_float(r"loading tensors completed, taking ([0-9.]+)\s*s", text),
        "total_s": _last_float(r"generate_image completed in ([0-9.]+)\s*s", text),
    }
    r["step_s"] = r["sample_s"] / steps if r["sample_s"] is not None and steps else None
    # its progress bar ("| 2/4 - 12.73s/it", the mean so far, or "it/s" below
    # 1 s) gives each step: the first one carries the graph set-up
    avg = {}
    for i, n, v, unit in re.findall(r"\| (\d+)/(\d+) - ([0-9.]+)(s/it|it/s)", text):
        if int(n) == steps:
            avg[int(i)] = float(v) if unit == "s/it" else 1.0 / float(v)
    if steps > 1 and all(i in avg for i in range(1, steps + 1)):
        each = [i * avg[i] - (i - 1) * avg.get(i - 1, 0.0) for i in range(1, steps + 1)]
        r["first_step_s"], r["later_step_s"] = each[0], statistics.fmean(each[1:])
    return r


def parse_petrel(text, steps):
    """Stage seconds from petrel imagine's closing stats lines."""
    r = {
        "text_s": _last_float(r"^text: ([0-9.]+) s", text),
        "sample_s": _last_float(r"^sample: \d+ steps in ([0-9.]+) s", text),
        "step_s": _last_float(r"^sample: .*\(([0-9.]+) s/step\)", text),
        "decode_s": _last_float(r"^decode: ([0-9.]+) s", text),
        "load_s": _last_float(r"^load: ([0-9.]+) s", text),
        "total_s": None,
    }
    m = re.findall(r"^sample: (\d+) steps", text, re.M)
    if m and int(m[-1]) != steps:
        r["error"] = f"ran {m[-1]} steps, not {steps}"
    if r["step_s"] is None and r["sample_s"] is not None and steps:
        r["step_s"] = r["sample_s"] / steps
    return r


def parse_gnu_time(text):
    """Peak RSS (bytes), wall seconds and CPU seconds from GNU time -v."""
    def grab(pat):
        m = re.search(pat, text, re.M)
        return m.group(1) if m else None
    rss = grab(r"Maximum resident set size \(kbytes\): (\d+)")
    user, sys_ = grab(r"User time \(seconds\): ([0-9.]+)"), grab(r"System time \(seconds\): ([0-9.]+)")
    wall = grab(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)")
    secs = None
    if wall:
        secs = 0.0
        for part in wall.split(":"):
            secs = secs * 60 + float(part)
    return {"rss": int(rss) * 1024 if rss else None, "wall": secs,
            "cpu": (float(user) + float(sys_)) if user and sys_ else None}


# ---- running -----------------------------------------------------------------------

def loadavg():
    try:
        return open("/proc/loadavg").read().split()[0]
    except OSError:
        return "?"


def wait_for_quiet(max_wait):
    """As bench/compare.py: wait up to max_wait s for the 1-minute load
    average to fall to the core count; (load at the start, still above?)."""
    ncpu = os.cpu_count() or 1
    deadline = time.monotonic() + max_wait
    while True:
        la = loadavg()
        try:
            busy = float(la) > ncpu
        except ValueError:
            return la, False
        if not busy or time.monotonic() >= deadline:
            return la, busy
        log(f"load average {la} above {ncpu} cores: waiting before the next run")
        time.sleep(10)


def commands(a, tool, config, size, exe, ckpt, taesd, tok, out_png):
    common_sd = ["-m", ckpt, "-p", a.prompt, "-t", str(a.threads), "--cfg-scale", str(a.cfg),
                 "--sampling-method", "euler", "--steps", str(a.steps), "-s", str(a.seed),
                 "-W", str(size), "-H", str(size), "-o", out_png, "-v"]
    common_pt = ["imagine", "-m", ckpt, "--tokenizer", tok, "-p", a.prompt, "-t", str(a.threads),
                 "--cfg", str(a.cfg), "--sampler", "euler", "--steps", str(a.steps), "-s", str(a.seed),
                 "-W", str(size), "-H", str(size), "-o", out_png]
    if tool == "sd.cpp":
        extra = {"f16": [], "q8_0": ["--type", "q8_0"], "taesd": ["--taesd", taesd]}[config]
        return [exe, *common_sd, *extra, *a.sdcpp_args]
    extra = {"f16": [], "q8_0": ["--weights", "q8_0"], "taesd": ["--taesd", taesd]}[config]
    return [exe, *common_pt, *extra, *a.petrel_args]


def run_one(a, gnu_time, cmd):
    """Run one program under GNU time -v; its parsed stage timings and rusage."""
    log("$ " + " ".join(shlex.quote(c) for c in cmd))
    with tempfile.TemporaryDirectory() as td:
        tfile = os.path.join(td, "time.txt")
        try:
            p = subprocess.run([gnu_time, "-v", "-o", tfile, *cmd], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=a.timeout)
            out, rc = p.stdout.decode("utf-8", "replace"), p.returncode
        except subprocess.TimeoutExpired as e:
            out, rc = (e.stdout or b"").decode("utf-8", "replace"), "timeout"
        tinfo = parse_gnu_time(open(tfile).read()) if os.path.exists(tfile) else {}
    return out, rc, tinfo


def bench(a, exes, ckpt, taesd, tok, probe_exe):
    runs = []
    out_dir = os.path.join(CACHE, "sd-out")
    os.makedirs(out_dir, exist_ok=True)
    gnu_time = ensure_gnu_time()
    for rnd in range(a.rounds):
        tools = list(a.tools) if rnd % 2 == 0 else list(reversed(a.tools))
        for size in a.sizes:
            for config in a.configs:
                for tool in tools:
                    png = os.path.join(out_dir, f"{tool}-{config}-{size}.png")
                    cmd = commands(a, tool, config, size, exes[tool], ckpt, taesd, tok, png)
                    la, busy = wait_for_quiet(a.quiet_wait)
                    out, rc, ti = run_one(a, gnu_time, cmd)
                    parse = parse_sdcpp if tool == "sd.cpp" else parse_petrel
                    res = parse(out, a.steps)
                    err = res.pop("error", None)
                    if rc != 0:
                        err = f"exit {rc}: " + " | ".join(out.strip().splitlines()[-3:])[-300:]
                    elif res["step_s"] is None:
                        err = "no timing lines in its output: " + " | ".join(out.strip().splitlines()[-3:])[-300:]
                    wall = ti.get("wall") or 0.0
                    run = {"round": rnd + 1, "tool": tool, "config": config, "size": size, **res,
                           "rss": ti.get("rss"), "wall": wall,
                           "cpu_share": (ti.get("cpu") or 0) / (wall * a.threads) if wall else 0.0,
                           "loadavg": la, "busy": busy, "error": err}
                    runs.append(run)
                    with open(os.path.join(out_dir, f"{tool}-{config}-{size}-r{rnd + 1}.log"), "w") as f:
                        f.write(out)
                    log(f"round {rnd + 1} {size} {tool} {config}: " + (err or (
                        f"{run['step_s']:.2f} s/step, text {fmt(run['text_s'])} s, decode {fmt(run['decode_s'])} s"))
                        + f", peak RSS {(run['rss'] or 0) / 2**20:.0f} MiB, {wall:.0f} s, "
                        f"cpu {100 * run['cpu_share']:.0f}%, load {la}" + (" (above cores)" if busy else ""))
    return runs


# ---- the report --------------------------------------------------------------------

def fmt(x, spec=".2f"):
    return "n/a" if x is None or x != x else format(x, spec)


def stat(runs, tool, config, size, key):
    xs = [r[key] for r in runs if r["tool"] == tool and r["config"] == config and r["size"] == size
          and not r["error"] and r.get(key) is not None]
    if not xs:
        return None, None
    return statistics.fmean(xs), (statistics.stdev(xs) if len(xs) > 1 else 0.0)


def ms(m, spec=".2f"):
    return "n/a" if m[0] is None else f"{m[0]:{spec}} ± {m[1]:{spec}}"


def ratio(sd, pt):
    """petrel speed / sd.cpp speed = sd.cpp seconds / petrel seconds."""
    return sd[0] / pt[0] if sd[0] and pt[0] else None


def met(x, want, below=False):
    if x is None:
        return "not measured"
    return "met" if (x <= want if below else x >= want) else "not met"


def report(a, runs, meta, macs, int8):
    have = {r["tool"] for r in runs}
    L = ["| size | config | stage | sd.cpp | petrel | petrel speed / sd.cpp |",
         "| --- | --- | --- | ---: | ---: | ---: |"]
    stages = [("step_s", "s/step"), ("text_s", "text encode s"), ("decode_s", "decode s")]
    for size in a.sizes:
        for config in a.configs:
            for key, label in stages:
                if key == "decode_s":
                    label = "TAESD decode s" if config == "taesd" else "VAE decode s"
                sd, pt = stat(runs, "sd.cpp", config, size, key), stat(runs, "petrel", config, size, key)
                L.append(f"| {size} | {config} | {label} | {ms(sd)} | {ms(pt)} | {fmt(ratio(sd, pt))}x |")
            sd, pt = stat(runs, "sd.cpp", config, size, "rss"), stat(runs, "petrel", config, size, "rss")
            mib = lambda m: (m[0] / 2**20, m[1] / 2**20) if m[0] else (None, None)  # noqa: E731
            rr = pt[0] / sd[0] if sd[0] and pt[0] else None
            L.append(f"| {size} | {config} | peak RSS MiB | {ms(mib(sd), '.0f')} | {ms(mib(pt), '.0f')} "
                     f"| {fmt(rr)}x (RSS petrel / sd.cpp) |")
    # targets: F16 runs of both (petrel's q8_0 beside it, as the issue allows either)
    T = ["| target (issue 11) | size | petrel f16 | petrel q8_0 | status |", "| --- | --- | ---: | ---: | --- |"]
    for size in a.sizes:
        sd = stat(runs, "sd.cpp", "f16", size, "step_s")
        r16, r8 = ratio(sd, stat(runs, "petrel", "f16", size, "step_s")), ratio(sd, stat(runs, "petrel", "q8_0", size, "step_s"))
        best = max([x for x in (r16, r8) if x is not None], default=None)
        T.append(f"| per step >= {TARGET_STEP:.1f}x sd.cpp F16 | {size} | {fmt(r16)}x | {fmt(r8)}x "
                 f"| {met(best, TARGET_STEP)} |")
    for size in a.sizes:
        sd = stat(runs, "sd.cpp", "f16", size, "decode_s")
        r16, r8 = ratio(sd, stat(runs, "petrel", "f16", size, "decode_s")), ratio(sd, stat(runs, "petrel", "q8_0", size, "decode_s"))
        best = max([x for x in (r16, r8) if x is not None], default=None)
        T.append(f"| VAE decode >= {TARGET_VAE:.1f}x sd.cpp F16 | {size} | {fmt(r16)}x | {fmt(r8)}x "
                 f"| {met(best, TARGET_VAE)} |")
    for size in a.sizes:
        sd = stat(runs, "sd.cpp", "f16", size, "rss")
        p16, p8 = stat(runs, "petrel", "f16", size, "rss"), stat(runs, "petrel", "q8_0", size, "rss")
        r16 = p16[0] / sd[0] if sd[0] and p16[0] else None
        r8 = p8[0] / sd[0] if sd[0] and p8[0] else None
        best = min([x for x in (r16, r8) if x is not None], default=None)
        T.append(f"| peak RSS <= {TARGET_RSS:.1f}x sd.cpp F16 | {size} | {fmt(r16)}x | {fmt(r8)}x "
                 f"| {met(best, TARGET_RSS, below=True)} |")
    # the UNet's share of the machine's int8 rate
    S = ["| size | UNet MACs per pass (conv / linear / attention) | per step (CFG: 2 passes) "
         "| tool config | s/step | achieved GOPS | share of measured int8 |",
         "| --- | --- | ---: | --- | ---: | ---: | ---: |"]
    for size in a.sizes:
        m = macs[size]
        for tool in ("petrel", "sd.cpp"):
            for config in ("f16", "q8_0"):
                st = stat(runs, tool, config, size, "step_s")
                gops = 2 * 2 * m["total"] / st[0] / 1e9 if st[0] else None
                share = gops / int8["int8_gops"] if gops and int8.get("int8_gops") else None
                S.append(f"| {size} | {m['total'] / 1e9:.1f} G ({m['conv'] / 1e9:.1f} / {m['linear'] / 1e9:.1f} / "
                         f"{m['attn'] / 1e9:.1f}) | {2 * m['total'] / 1e9:.1f} G | {tool} {config} "
                         f"| {fmt(st[0])} | {fmt(gops, '.0f')} | {fmt(100 * share if share else None, '.0f')}% |")
    raw = ["| round | size | tool | config | s/step | first / later steps s | text s | decode s | load s "
           "| peak RSS | wall | cpu share | load avg | note |",
           "| ---: | ---: | --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in runs:
        note = r["error"][:140] if r["error"] else ("MARKED: load average above the core count" if r["busy"] else "")
        fl = f"{fmt(r.get('first_step_s'))} / {fmt(r.get('later_step_s'))}" if r.get("first_step_s") else "n/a"
        raw.append(f"| {r['round']} | {r['size']} | {r['tool']} | {r['config']} | {fmt(r['step_s'])} | {fl} "
                   f"| {fmt(r['text_s'])} | {fmt(r['decode_s'])} | {fmt(r['load_s'])} "
                   f"| {(r['rss'] or 0) / 2**20:.0f} MiB | {r['wall']:.0f} s | {100 * r['cpu_share']:.0f}% "
                   f"| {r['loadavg']} | {note} |")
    n_busy = sum(1 for r in runs if r["busy"])
    only = "" if have >= {"petrel", "sd.cpp"} else f" (only {', '.join(sorted(have))} ran)"
    doc = [
        f"## Image run of {meta['date']}{only}",
        "",
        *([f"Note: {a.note}", ""] if a.note else []),
        f"- date: {meta['date']}",
        f"- command: `{meta['command']}`",
        f"- machine: {meta['cpu']} ({meta['ncpu']} CPUs online), Linux {meta['kernel']}, "
        f"load average {meta['load_before']} before, {meta['load_after']} after; "
        f"int8 measured {int8.get('int8_gops', 0):.0f} GOPS on {a.threads} threads ({int8.get('int8_isa', '?')}), "
        f"clock {int8.get('clock_ghz', 0):.2f} GHz",
        f"- petrel: git {meta['petrel_rev']}, Release, -DPETREL_NATIVE=ON",
        f"- stable-diffusion.cpp: stable-diffusion-cpp-python {meta['sdcpp_pkg']} sdist, sd-cli, CPU backend, "
        f"Release, -DGGML_NATIVE=ON; extra options {' '.join(a.sdcpp_args) or '(none)'}",
        f"- model: random SD1.5-shaped F16 single-file LDM checkpoint (tools/make_sd15_random.py), random TAESD; "
        f"CLIP vocabulary from sd.cpp's sources (bench/sdcpp_vocab.py)",
        f"- generation: prompt \"{a.prompt}\", empty negative, -t {a.threads}, CFG {a.cfg}, Euler, {a.steps} steps, "
        f"seed {a.seed}; {a.rounds} round{'' if a.rounds == 1 else 's'} alternating (order flipped each round); every figure is the mean ± sd "
        f"over rounds",
        "",
        "### Speed and memory",
        "",
        *L,
        "",
        "### Issue-11 targets (against sd.cpp's F16 run; met when either petrel run meets it)",
        "",
        *T,
        "",
        "### The UNet's share of the machine's int8 rate",
        "",
        *S,
        "",
        f"Load: {n_busy} of {len(runs)} runs started with the 1-minute load average above the core count "
        f"after waiting up to {a.quiet_wait:.0f} s.",
        "",
        "### Every run",
        "",
        *raw,
        "",
    ]
    return "\n".join(L + [""] + T + [""] + S), "\n".join(doc)


IMAGE_INTRO = """
Written by `bash bench/sd_run.sh` (bench/sd_compare.py); do not edit by hand. Both programs on the same
random SD1.5-shaped F16 checkpoint (real shapes, seeded random values: the speed of a step does not
depend on the values), the same prompt, threads, CFG 7.5, Euler, 4 steps and seed, alternating runs.
Stage seconds are each program's own timers (sd-cli -v's log lines, petrel imagine's closing stats);
peak RSS is GNU time -v's maximum resident set size of the whole process. "petrel speed / sd.cpp" is
sd.cpp's seconds over petrel's (above 1: petrel is faster); the RSS ratio is petrel's over sd.cpp's.
The method is in bench/README.md and the docstring of bench/sd_compare.py. A run on a new CPU is
added as its own section; a run on the same CPU replaces that CPU's section.

"""


def write_results(path, doc, cpu):
    """Rewrite the image part of RESULTS.md (from IMAGE_HEAD on), keeping the
    LLM part above it verbatim and the image sections of other CPUs."""
    try:
        text = open(path).read()
    except OSError:
        text = ""
    i = text.find(IMAGE_HEAD)
    llm, img = (text[:i], text[i:]) if i >= 0 else (text, "")
    kept = ["## Image run of " + s.rstrip("\n") + "\n" for s in img.split("\n## Image run of ")[1:]
            if f"- machine: {cpu} (" not in s]
    with open(path, "w") as f:
        f.write(llm.rstrip("\n") + "\n\n" + IMAGE_HEAD + "\n" + IMAGE_INTRO + doc
                + "".join("\n" + s for s in kept))


# ---- main --------------------------------------------------------------------------

def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") or line.startswith("Hardware"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def git_rev():
    try:
        rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], check=True,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout.strip()
        return rev + (" + uncommitted changes" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def sdcpp_pkg_version():
    if os.environ.get("SDCPP_PYTHON_VERSION"):
        return os.environ["SDCPP_PYTHON_VERSION"]
    with open(os.path.join(ROOT, "bench", "build_sdcpp.sh")) as f:
        m = re.search(r"SDCPP_PYTHON_VERSION=\$\{SDCPP_PYTHON_VERSION:-([0-9.]+)\}", f.read())
    return m.group(1) if m else "unknown"


def probe(exe, *args):
    out = subprocess.run([exe, *map(str, args)], check=True, stdout=subprocess.PIPE, text=True).stdout
    d = {}
    for line in out.splitlines():
        k, _, v = line.partition(" ")
        try:
            d[k] = float(v)
        except ValueError:
            d[k] = v
    return d


def main():
    ap = argparse.ArgumentParser(description="petrel imagine vs stable-diffusion.cpp (see the module docstring)")
    ap.add_argument("--parse", nargs=2, metavar=("sdcpp|petrel", "FILE"),
                    help="parse one saved log and print its timings as JSON, then exit")
    ap.add_argument("--macs", nargs="?", type=int, const=512, metavar="SIZE",
                    help="print the SD1.5 UNet's multiply-adds per pass at SIZE x SIZE and exit")
    ap.add_argument("--sizes", default="256,512", help="image sizes, comma list (default 256,512)")
    ap.add_argument("--configs", default=",".join(CONFIGS), help="comma list of: " + ", ".join(CONFIGS))
    ap.add_argument("--only", choices=["petrel", "sd.cpp"], help="run one program alone")
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--cfg", type=float, default=7.5)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--prompt", default=PROMPT)
    ap.add_argument("--rounds", type=int, default=2, help="alternations per size and config (default 2)")
    ap.add_argument("--petrel", help="petrel binary (default: build it in --build-dir)")
    ap.add_argument("--sd-cli", help="sd-cli binary (default: bench/build_sdcpp.sh)")
    ap.add_argument("--model", help=f"checkpoint (default {CKPT}, made by tools/make_sd15_random.py)")
    ap.add_argument("--taesd", help=f"TAESD (default {TAESD})")
    ap.add_argument("--tokenizer", help="folder with vocab.json + merges.txt (default: bench/sdcpp_vocab.py)")
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build-bench"))
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per run (default 1800)")
    ap.add_argument("--results", default=os.path.join(ROOT, "bench", "RESULTS.md"),
                    help="markdown report to write ('' for none)")
    ap.add_argument("--note", default="", help="a line of context written into the report section")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--quiet-wait", type=float, default=300,
                    help="seconds to wait before a run for the load average to drop to the core count (default 300)")
    ap.add_argument("--sdcpp-args", default="", help="extra sd-cli options, e.g. '--diffusion-fa'")
    ap.add_argument("--petrel-args", default="", help="extra petrel imagine options")
    a = ap.parse_args()

    if a.parse:
        kind, path = a.parse
        text = open(path, encoding="utf-8", errors="replace").read()
        print(json.dumps((parse_sdcpp if kind == "sdcpp" else parse_petrel)(text, a.steps), sort_keys=True))
        return
    if a.macs:
        m = unet_macs(SD15_UNET, a.macs, a.macs)
        print(json.dumps({k: v for k, v in m.items()}, sort_keys=True))
        return

    a.sizes = [int(s) for s in a.sizes.split(",") if s]
    a.configs = [c for c in a.configs.split(",") if c]
    for c in a.configs:
        if c not in CONFIGS:
            ap.error(f"unknown config {c!r}")
    for s in a.sizes:
        if s % 64:
            ap.error(f"size {s} is not a multiple of 64")
    a.tools = ["petrel", "sd.cpp"] if not a.only else [a.only]
    a.sdcpp_args, a.petrel_args = a.sdcpp_args.split(), a.petrel_args.split()

    load_before = loadavg()
    exes = {}
    if "petrel" in a.tools:
        exes["petrel"] = a.petrel or build_petrel(a.build_dir, a.jobs)
    if "sd.cpp" in a.tools:
        exes["sd.cpp"] = a.sd_cli or build_sdcpp()
    probe_exe = build_probe(a.build_dir)
    ckpt, taesd, tok = get_inputs(a)
    int8 = {**probe(probe_exe, "clock", a.threads), **probe(probe_exe, "int8", a.threads)}
    log(f"int8 measured {int8.get('int8_gops', 0):.0f} GOPS ({int8.get('int8_isa')}), clock {int8.get('clock_ghz', 0):.2f} GHz")
    macs = {s: unet_macs(SD15_UNET, s, s) for s in a.sizes}
    runs = bench(a, exes, ckpt, taesd, tok, probe_exe)
    int8_after = probe(probe_exe, "int8", a.threads)
    int8["int8_gops"] = max(int8.get("int8_gops", 0), int8_after.get("int8_gops", 0))

    meta = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "command": " ".join(shlex.quote(c) for c in ["bash", "bench/sd_run.sh", *sys.argv[1:]]),
        "cpu": cpu_model(), "ncpu": os.cpu_count(), "kernel": platform.release(),
        "load_before": load_before, "load_after": loadavg(), "petrel_rev": git_rev(),
        "sdcpp_pkg": sdcpp_pkg_version(),
    }
    os.makedirs(os.path.join(CACHE, "results"), exist_ok=True)
    raw_path = os.path.join(CACHE, "results", "sd-" + time.strftime("%Y%m%d-%H%M%S") + ".json")
    with open(raw_path, "w") as f:  # first: a report bug must not lose the runs
        json.dump({"meta": meta, "args": vars(a), "int8": int8, "macs": macs, "runs": runs}, f, indent=1)
    log(f"raw results: {raw_path}")
    summary, doc = report(a, runs, meta, macs, int8)
    print(summary)
    if a.results:
        write_results(a.results, doc, meta["cpu"])
        log(f"wrote {a.results}")


if __name__ == "__main__":
    main()
