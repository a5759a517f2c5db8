#!/usr/bin/env python3
"""compare.py — petrel against llama.cpp on the same GGUF, threads and machine.

usage: bench/run.sh [options]      (the same as python3 bench/compare.py)

One command from a clean checkout:
  1. builds petrel (Release, -DPETREL_NATIVE=ON, in build-bench/) unless
     --petrel is given; builds llama.cpp's llama-bench from the pinned
     llama-cpp-python sdist (bench/build_llamacpp.sh, cached) unless
     --llama-bench is given; builds bench/machine_probe.c;
  2. gets the models: the real SmolLM2-135M-Instruct Q4_1
     (tools/fetch_model.py, or $PETREL_SMOLLM2) and the Qwen2.5-1.5B-shaped
     random-weight Q4_0 / Q8_0 files (tools/gen_bench_models.py, cached in
     ~/.cache/petrel-bench/models);
  3. per model: measures the core clock and the int8 rate, then runs
     `petrel bench` and `llama-bench` ALTERNATING (petrel, llama.cpp, petrel,
     llama.cpp, ... for --rounds rounds), each with the same tests
     (-p 512 -n 128), threads (-t 2) and repetitions (-r 3), both with their
     own warm-up; a read-bandwidth measurement runs before the first and
     after every engine run, so each run's decode bound uses the bandwidth
     measured right around it;
  4. prints, per model and test, both speeds (mean +- sd over every
     repetition of every round), the ratio petrel / llama.cpp, each
     engine's share of the physical bound, the peak RSS of each tool, and
     writes it all to bench/RESULTS.md (--results) with the command, date,
     CPU and versions.

Bounds (see bench/RESULTS.md for the numbers):
  tg (decode): every weight a token touches is read once from memory per
      token, so  bound_tg = bandwidth / bytes_per_token  where
      bytes_per_token is the size of every blk.* tensor, output_norm, and
      the output matrix (output.weight, or token_embd.weight when tied; the
      input embedding lookup reads one row and is left out). The KV cache
      read (< 1% here at 128 tokens) is left out too, so the bound is
      slightly generous; but a model smaller than the last-level cache can
      decode partly from cache and beat it. bandwidth = mean of the best-of-8-passes read
      bandwidth (machine_probe bw, same thread count) measured just before
      and just after that engine run, over the probe threads' CPU time, so
      time slices lost to other processes do not lower the bound (the
      engines' t/s are wall time: their "cpu share" column says how much of
      the cores they had).
  pp (prefill): every layer matrix does one multiply-add per weight per
      token:  bound_pp = peak_int8_ops / (2 * matmul_params)  where
      matmul_params counts the elements of the 2-D blk.* tensors (the
      output matrix runs for the last token only; attention scores, ~2% at
      512 tokens on these shapes, are left out) and
        peak_int8_ops = threads * clock_hz * macs_per_cycle * 2
      clock_hz measured under load by machine_probe clock (a chain of
      dependent 3-cycle imuls on every thread, per CPU second of the
      thread), macs_per_cycle from the widest int8
      dot-product instruction the CPU has (machine_probe int8):
        avx512_vnni  128 = 2 vpdpbusd zmm per cycle x 64 u8*s8 MACs
        avx_vnni      64 = 2 vpdpbusd ymm per cycle x 32 MACs
        avx2          32 = 1 vpmaddubsw+vpmaddwd pair per cycle x 32 MACs
        neon_dotprod  32 = 2 sdot per cycle x 16 MACs
      (AMX tiles, where the CPU has them, are not counted: the bound is the
      vector-ISA one of issue 4.) The measured int8 rate of the same loop
      is printed beside it as a cross-check of the formula. petrel runs its
      prefill products on AMX where the CPU has it (kernel variant "amx");
      machine_probe amx measures what the tile unit reaches on the 16 x 16 x
      32 products petrel issues, and the machine table gives petrel's
      prefill as a share of that too, so the vector bound is not mistaken
      for the machine's ceiling.

Standard library only (the model generator needs numpy and gguf; they are
pip-installed if missing).
"""
import argparse
import datetime
import json
import math
import mmap
import os
import platform
import re
import shlex
import statistics
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.environ.get("PETREL_BENCH_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "petrel-bench")

MODELS = {  # name -> how to get it
    "smollm2-135m-q4_1": "fetch",
    "qwen2.5-1.5b-q4_0": "gen",
    "qwen2.5-1.5b-q8_0": "gen",
}
MACS_PER_CYCLE = {"avx512_vnni": 128, "avx_vnni": 64, "avx2": 32, "neon_dotprod": 32, "none": 0}

# issue 4's targets, checked in the summary
TARGET_PP_RATIO = 2.0
TARGET_TG_RATIO_SMALL = 1.5
TARGET_TG_RATIO_LARGE = 1.0
TARGET_TG_BOUND_LARGE = 0.85
TARGET_PP_PEAK_LARGE = 0.40


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] compare: {msg}", file=sys.stderr, flush=True)


def die(msg):
    log("error: " + msg)
    sys.exit(1)


def sh(cmd, **kw):
    log("$ " + " ".join(shlex.quote(c) for c in cmd))
    return subprocess.run(cmd, check=True, **kw)


# ---- building ------------------------------------------------------------------

def build_petrel(build_dir, jobs):
    sh(["cmake", "-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release", "-DPETREL_NATIVE=ON"],
       stdout=subprocess.DEVNULL)
    sh(["cmake", "--build", build_dir, "--target", "petrel", "-j", str(jobs)], stdout=subprocess.DEVNULL)
    return os.path.join(build_dir, "petrel")


def build_llama():
    out = sh(["bash", os.path.join(ROOT, "bench", "build_llamacpp.sh")], stdout=subprocess.PIPE, text=True)
    return out.stdout.strip().splitlines()[-1]


def build_probe(build_dir):
    src = os.path.join(ROOT, "bench", "machine_probe.c")
    exe = os.path.join(build_dir, "machine_probe")
    os.makedirs(build_dir, exist_ok=True)
    if not os.path.exists(exe) or os.path.getmtime(exe) < os.path.getmtime(src):
        sh(["cc", "-O3", "-march=native", "-pthread", src, "-o", exe])
    return exe


def ensure_py_deps():
    try:
        import numpy  # noqa: F401
        import gguf  # noqa: F401
    except ImportError:
        sh([sys.executable, "-m", "pip", "install", "--quiet", "numpy", "gguf"])


def model_path(name):
    if MODELS[name] == "fetch":
        env = os.environ.get("PETREL_SMOLLM2")
        if env and os.path.exists(env):
            return env
        out = sh([sys.executable, os.path.join(ROOT, "tools", "fetch_model.py")], stdout=subprocess.PIPE, text=True)
        return out.stdout.strip().splitlines()[-1]
    ensure_py_deps()
    out = sh([sys.executable, os.path.join(ROOT, "tools", "gen_bench_models.py"), name],
             stdout=subprocess.PIPE, text=True)
    return out.stdout.strip().splitlines()[-1]


# ---- GGUF tensor table (enough to size the bounds) ---------------------------------

# ggml type id -> (elements per block, bytes per block)
GGML_TYPES = {
    0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24), 8: (32, 34), 9: (32, 36),
    10: (256, 84), 11: (256, 110), 12: (256, 144), 13: (256, 176), 14: (256, 210), 15: (256, 292),
    16: (256, 66), 17: (256, 74), 18: (256, 98), 19: (256, 50), 20: (32, 18), 21: (256, 110),
    22: (256, 82), 23: (256, 136), 24: (1, 1), 25: (1, 2), 26: (1, 4), 27: (1, 8), 28: (1, 8),
    29: (256, 56), 30: (1, 2),
}
GGUF_SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


def gguf_tensors(path):
    """[(name, dims, type, nbytes)] from the GGUF header (v2/v3)."""
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        magic, version, n_tensors, n_kv = struct.unpack_from("<4sIQQ", m, 0)
        if magic != b"GGUF" or version < 2:
            raise ValueError(f"{path}: not a GGUF v2+ file")
        off = 24

        def string(off):
            (n,) = struct.unpack_from("<Q", m, off)
            return m[off + 8: off + 8 + n].decode("utf-8", "replace"), off + 8 + n

        def skip_value(t, off):
            if t in GGUF_SCALAR:
                return off + struct.calcsize("<" + GGUF_SCALAR[t])
            if t == 8:
                return string(off)[1]
            if t == 9:
                et, n = struct.unpack_from("<IQ", m, off)
                off += 12
                if et in GGUF_SCALAR:
                    return off + n * struct.calcsize("<" + GGUF_SCALAR[et])
                for _ in range(n):
                    off = skip_value(et, off)
                return off
            raise ValueError(f"{path}: unknown GGUF value type {t}")

        for _ in range(n_kv):
            _, off = string(off)
            (t,) = struct.unpack_from("<I", m, off)
            off = skip_value(t, off + 4)
        out = []
        for _ in range(n_tensors):
            name, off = string(off)
            (nd,) = struct.unpack_from("<I", m, off)
            dims = struct.unpack_from(f"<{nd}Q", m, off + 4)
            t, _ = struct.unpack_from("<IQ", m, off + 4 + 8 * nd)
            off += 4 + 8 * nd + 12
            if t not in GGML_TYPES:
                raise ValueError(f"{path}: tensor {name} has unknown type {t}")
            blk, size = GGML_TYPES[t]
            n = math.prod(dims)
            out.append((name, dims, t, n // blk * size))
        return out


def model_facts(path):
    ts = gguf_tensors(path)
    by_name = {t[0]: t for t in ts}
    layer = [t for t in ts if t[0].startswith("blk.")]
    out_mat = by_name.get("output.weight") or by_name["token_embd.weight"]
    tg_bytes = sum(t[3] for t in layer) + out_mat[3] + (by_name["output_norm.weight"][3] if "output_norm.weight" in by_name else 0)
    pp_params = sum(math.prod(t[1]) for t in layer if len(t[1]) == 2)
    return {
        "file_bytes": os.path.getsize(path),
        "weight_bytes": sum(t[3] for t in ts),
        "n_params": sum(math.prod(t[1]) for t in ts),
        "tied": "output.weight" not in by_name,
        "tg_bytes_per_token": tg_bytes,
        "pp_matmul_params": pp_params,
    }


# ---- measuring ---------------------------------------------------------------------

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


def bandwidth(exe, threads):
    return probe(exe, "bw", threads, 1024, 8)["bw_best_gbs"]


def run_tool(cmd, timeout, env=None):
    """Run one benchmark process (with env added to the environment); return (parsed JSON list or None, peak RSS
    in bytes, wall seconds, CPU seconds, error text). Peak RSS and CPU time
    come from wait4's rusage of that one child (ru_maxrss is KiB on Linux)."""
    log("$ " + " ".join(shlex.quote(c) for c in cmd))
    with tempfile.TemporaryFile() as fo, tempfile.TemporaryFile() as fe:
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdout=fo, stderr=fe, env={**os.environ, **(env or {})})
        deadline = t0 + timeout
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                p.kill()
                pid, status, ru = os.wait4(p.pid, 0)
                p.returncode = -9
                return (None, ru.ru_maxrss * 1024, time.monotonic() - t0, ru.ru_utime + ru.ru_stime,
                        f"timed out after {timeout} s")
            time.sleep(0.2)
        p.returncode = os.waitstatus_to_exitcode(status)
        wall = time.monotonic() - t0
        fo.seek(0)
        fe.seek(0)
        out, err = fo.read().decode("utf-8", "replace"), fe.read().decode("utf-8", "replace")
    cpu = ru.ru_utime + ru.ru_stime
    if p.returncode != 0:
        return None, ru.ru_maxrss * 1024, wall, cpu, f"exit {p.returncode}: {err.strip()[-400:]}"
    try:
        return json.loads(out), ru.ru_maxrss * 1024, wall, cpu, None
    except json.JSONDecodeError as e:
        return None, ru.ru_maxrss * 1024, wall, cpu, f"output is not JSON ({e}): {out[:200]!r}"


def test_name(r):
    p, g = r["n_prompt"], r["n_gen"]
    return f"pp{p}" if g == 0 else f"tg{g}" if p == 0 else f"pp{p}+tg{g}"


def mean_sd(xs):
    if not xs:
        return float("nan"), float("nan")
    return statistics.fmean(xs), (statistics.stdev(xs) if len(xs) > 1 else 0.0)


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


def llama_pkg_version():
    """The llama-cpp-python version bench/build_llamacpp.sh pins (or the
    LLAMA_CPP_PYTHON_VERSION override it honours)."""
    if os.environ.get("LLAMA_CPP_PYTHON_VERSION"):
        return os.environ["LLAMA_CPP_PYTHON_VERSION"]
    with open(os.path.join(ROOT, "bench", "build_llamacpp.sh")) as f:
        m = re.search(r"LLAMA_CPP_PYTHON_VERSION=\$\{LLAMA_CPP_PYTHON_VERSION:-([0-9.]+)\}", f.read())
    return m.group(1) if m else "unknown"


def loadavg():
    try:
        return open("/proc/loadavg").read().split()[0]
    except OSError:
        return "?"


def wait_for_quiet(max_wait):
    """Wait (up to max_wait seconds) until the 1-minute load average is at
    most the number of online CPUs. Returns (load average at the start of
    the run, True when it is still above the core count: such a run is
    marked in the report)."""
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
        log(f"load average {la} above {ncpu} cores: waiting before the next engine run")
        time.sleep(10)


# Compile-time ISA macros that decide which ggml CPU kernels llama.cpp has
# (GGML_NATIVE builds with -march=native, plus the AMX switch-off of
# bench/build_llamacpp.sh); the ones petrel's variants correspond to first.
LLAMA_ISA_MACROS = [("__AMX_INT8__", "amx-int8"), ("__AVX512VNNI__", "avx512vnni"), ("__AVXVNNI__", "avxvnni"),
                    ("__AVX512F__", "avx512f"), ("__AVX512BF16__", "avx512bf16"), ("__AVX2__", "avx2"),
                    ("__FMA__", "fma"), ("__F16C__", "f16c"), ("__ARM_FEATURE_MATMUL_INT8", "i8mm"),
                    ("__ARM_FEATURE_DOTPROD", "dotprod")]


def llama_isa():
    """The int8/float ISA extensions llama.cpp's build was compiled for, read
    from the compiler with the flags bench/build_llamacpp.sh uses."""
    flags = ["-march=native"]
    with open(os.path.join(ROOT, "bench", "build_llamacpp.sh")) as f:
        m = re.search(r'^NO_AMX="([^"]*)"', f.read(), re.M)
    no_amx = m.group(1).split() if m else []
    try:
        if platform.machine() == "x86_64" and no_amx:
            subprocess.run(["cc", *no_amx, "-x", "c", "-c", "-o", os.devnull, "-"], input="int x;", text=True,
                           check=True, stderr=subprocess.DEVNULL)
            flags += no_amx
        out = subprocess.run(["cc", *flags, "-dM", "-E", "-x", "c", os.devnull], check=True,
                             stdout=subprocess.PIPE, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    have = [name for macro, name in LLAMA_ISA_MACROS if re.search(rf"^#define {macro} ", out, re.M)]
    return " ".join(have) or "baseline"


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags") or line.startswith("Features"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def petrel_tools(petrel, path):
    """The petrel runs of a model: its best kernels (auto), and, when those
    use an ISA llama.cpp's build does not (AMX tiles, whose llama.cpp
    kernels crash at this version), the same model forced onto the
    variant of the ISA both share (PETREL_CPU), so a same-ISA comparison
    stands beside the best-of-each one. [(tool name, env, variant)]."""
    auto = repack_cost(petrel, path)
    variant = auto[0] if auto else "unknown"
    tools = [("petrel", {}, variant)]
    if variant == "amx":
        tools.append(("petrel same-ISA", {"PETREL_CPU": "avx512vnni"}, "avx512vnni"))
    return tools


def repack_cost(petrel, path, env=None):
    """petrel info's kernels line for the model: (variant, matrices, MiB,
    seconds of repacking at load), or None. The file is in the page cache
    by then (the engines just read it), so this is the repacking itself."""
    try:
        out = subprocess.run([petrel, "info", path], check=True, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True, timeout=600,
                             env={**os.environ, **(env or {})}).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"^kernels +(\S+), (\d+) matrices repacked \(([0-9.]+) MiB\) in ([0-9.]+) s$", out, re.M)
    return (m.group(1), int(m.group(2)), float(m.group(3)), float(m.group(4))) if m else None


# ---- the comparison ----------------------------------------------------------------

def bench_model(a, name, path, petrel, llama, probe_exe):
    facts = model_facts(path)
    clk = probe(probe_exe, "clock", a.threads)
    i8 = probe(probe_exe, "int8", a.threads)
    amx = probe(probe_exe, "amx", a.threads)
    isa = str(i8.get("int8_isa", "none"))
    peak_ops = a.threads * clk["clock_ghz"] * 1e9 * MACS_PER_CYCLE.get(isa, 0) * 2
    log(f"{name}: clock {clk['clock_ghz']:.2f} GHz, {isa}, int8 peak {peak_ops / 1e9:.0f} GOPS "
        f"(measured {i8.get('int8_gops', 0):.0f}; AMX {amx.get('amx_gops', 0):.0f})")
    common = ["-m", path, "-p", str(a.n_prompt), "-n", str(a.n_gen), "-r", str(a.reps), "-t", str(a.threads),
              "-o", "json"]
    ptools = petrel_tools(petrel, path)
    # (tool, command, extra environment, ISA path of that run)
    tools = [(t, [petrel, "bench", *common], env, f"petrel kernels {v}") for t, env, v in ptools]
    tools.append(("llama.cpp", [llama, *common, *a.llama_args], {}, f"ggml CPU, built for {a.llama_isa}"))
    runs = []
    bw_prev = bandwidth(probe_exe, a.threads)
    bws = [bw_prev]
    for rnd in range(a.rounds):
        for tool, cmd, env, isa_path in tools:
            la, busy = wait_for_quiet(a.quiet_wait)
            res, rss, wall, cpu, err = run_tool(cmd, a.timeout, env)
            bw_next = bandwidth(probe_exe, a.threads)
            bws.append(bw_next)
            # the share of `threads` cores the process had over its life
            # (load and warm-up included): low means the machine was busy
            run = {"round": rnd + 1, "tool": tool, "rss": rss, "wall": wall, "error": err,
                   "cpu_share": cpu / (wall * a.threads) if wall > 0 else 0.0,
                   "bw_gbs": (bw_prev + bw_next) / 2, "loadavg": la, "busy": busy, "isa": isa_path,
                   "env": env, "tests": {}}
            if res:
                for r in res:
                    run["tests"][test_name(r)] = {"samples_ts": r["samples_ts"], "avg_ts": r["avg_ts"],
                                                  "build_commit": r.get("build_commit"),
                                                  "build_number": r.get("build_number"),
                                                  "model_type": r.get("model_type")}
            log(f"{name} round {rnd + 1} {tool}: " + (err or ", ".join(
                f"{k} {v['avg_ts']:.2f} t/s" for k, v in run["tests"].items()))
                + f"; bw {run['bw_gbs']:.1f} GB/s, peak RSS {rss / 2**20:.0f} MiB, "
                f"{wall:.0f} s, cpu {100 * run['cpu_share']:.0f}%, load {la}" + (" (above cores)" if busy else ""))
            runs.append(run)
            bw_prev = bw_next
    repack = repack_cost(petrel, path)
    return {"name": name, "path": path, "facts": facts, "clock_ghz": clk["clock_ghz"], "isa": isa,
            "repack": repack,
            "peak_ops": peak_ops, "int8_gops_measured": i8.get("int8_gops", 0),
            "amx_gops_measured": amx.get("amx_gops", 0), "bws": bws, "runs": runs}


def tool_names(m):
    """The tools of a model's runs in run order: "petrel", maybe "petrel
    same-ISA", "llama.cpp"."""
    out = []
    for run in m["runs"]:
        if run["tool"] not in out:
            out.append(run["tool"])
    return out


def summarize(m):
    """Per test: every tool's pooled t/s and share of bound, and each petrel
    run's ratio over llama.cpp."""
    f = m["facts"]
    rows = []
    tests = []
    for run in m["runs"]:
        for t in run["tests"]:
            if t not in tests:
                tests.append(t)
    tools = tool_names(m)
    for t in tests:
        row = {"test": t}
        for tool in tools:
            samples, shares, bounds = [], [], []
            for run in m["runs"]:
                if run["tool"] != tool or t not in run["tests"]:
                    continue
                r = run["tests"][t]
                samples += r["samples_ts"]
                if t.startswith("tg"):
                    bound = run["bw_gbs"] * 1e9 / f["tg_bytes_per_token"]
                elif t.startswith("pp") and "+" not in t:
                    bound = m["peak_ops"] / (2 * f["pp_matmul_params"]) if m["peak_ops"] else float("nan")
                else:
                    bound = float("nan")
                bounds.append(bound)
                shares.append(r["avg_ts"] / bound if bound == bound and bound > 0 else float("nan"))
            row[tool] = mean_sd(samples)
            row[tool + " share"] = statistics.fmean(shares) if shares else float("nan")
            row[tool + " bound"] = statistics.fmean(bounds) if bounds else float("nan")
        l = row.get("llama.cpp", (float("nan"),))[0]
        for tool in tools:
            if tool.startswith("petrel"):
                p = row[tool][0]
                row[tool + " ratio"] = p / l if l and l == l and p == p else float("nan")
        row["ratio"] = row["petrel ratio"]
        rows.append(row)
    rss = {}
    for tool in tools:
        vals = [run["rss"] for run in m["runs"] if run["tool"] == tool]
        rss[tool] = max(vals) if vals else 0
    return rows, rss


def isa_paths(m):
    """What each tool ran on, e.g. {"petrel": "petrel kernels amx", ...}."""
    out = {}
    for run in m["runs"]:
        out.setdefault(run["tool"], run.get("isa", "unknown"))
    return out


def fmt(x, spec=".2f"):
    return "n/a" if x != x else format(x, spec)


def pct(x):
    return "n/a" if x != x else f"{100 * x:.0f}%"


def measured_peak_shares(m, key="int8_gops_measured"):
    """petrel's prefill rate per pp test as a share of an int8 rate the
    machine probe measured for this model (key: the vpdpbusd loop, whose
    formula peak assumes both ports at the measured clock and which on a
    shared host can fall well below it; or the AMX tile loop), e.g.
    "pp512 51%"."""
    gops = m.get(key, 0)
    if not gops:
        return "n/a"
    out = []
    for row in summarize(m)[0]:
        t = row["test"]
        if t.startswith("pp") and "+" not in t:
            ops = row["petrel"][0] * 2 * m["facts"]["pp_matmul_params"]
            out.append(f"{t} {pct(ops / (gops * 1e9))}")
    return ", ".join(out) or "n/a"


def repack_text(r):
    if not r:
        return "n/a"
    variant, n, mib, secs = r
    return f"{n} matrices, {mib:.0f} MiB in {secs:.2f} s ({variant})"


def target_note(name, row):
    """The issue-4 target for this model and test, and whether it is met."""
    large = name.startswith("qwen")
    t = row["test"]
    r, s = row["ratio"], row["petrel share"]
    if t.startswith("pp") and "+" not in t:
        want = f">= {TARGET_PP_RATIO:.1f}x" + (f", >= {TARGET_PP_PEAK_LARGE:.0%} peak" if large else "")
        ok = r >= TARGET_PP_RATIO and (not large or s >= TARGET_PP_PEAK_LARGE)
    elif t.startswith("tg"):
        if large:
            want = f">= {TARGET_TG_RATIO_LARGE:.1f}x, >= {TARGET_TG_BOUND_LARGE:.0%} bound"
            ok = r >= TARGET_TG_RATIO_LARGE and s >= TARGET_TG_BOUND_LARGE
        else:
            want = f">= {TARGET_TG_RATIO_SMALL:.1f}x"
            ok = r >= TARGET_TG_RATIO_SMALL
    else:
        return ""
    return f"{want}: {'met' if ok else 'not met'}"


RESULTS_HEAD = """# petrel vs llama.cpp: CPU speed (issues 4 and 10)

Written by `bench/run.sh` (bench/compare.py); do not edit by hand. Each section is one run of the
harness on one machine: both engines on the same GGUF, threads and machine, alternating petrel /
llama.cpp. Our machines differ from day to day (an Intel Xeon with AMX, an AMD EPYC without), so a
run on a new CPU is appended as its own section rather than replacing the others.

Fairness (issue 10). llama.cpp is built as its users build it: Release, -DGGML_NATIVE=ON (every ISA
extension of the build machine), OpenMP, its CPU repacking of Q4_0. Its AMX kernels crash with
SIGILL at this version on our Xeons, so they are switched off there (bench/build_llamacpp.sh), and on
such a CPU, where petrel's best prefill runs on AMX tiles, the harness also runs petrel forced onto
the ISA both sides share (PETREL_CPU=avx512vnni): the "same-ISA" columns. On a CPU without AMX both
sides already run on the same ISA and those columns repeat the best run. Each section's "ISA paths"
table says what each side's matrix products ran on. Before each engine run the harness waits (up to
--quiet-wait seconds) for the 1-minute load average to drop to the core count; a run that still
starts above it is marked in the last table.

How the bounds are computed is in the docstring of bench/compare.py: decode = weight bytes read per
token over the read bandwidth measured just before and after that engine run; prefill = 2 x matmul
params per token over (threads x measured clock x int8 MACs per cycle x 2); both probes divide by
their threads' CPU time, so they describe the machine, not the load of the moment. "% of bound" is the
engine's t/s over the bound's t/s. The machine is shared (2 cores): the last table of each section
gives, per engine run, the load average at its start and the "cpu share", the CPU time the process
got over wall time x threads (100% = it had its cores to itself); contention lowers both engines
and the measured bandwidth alike.
The prefill bound assumes both vpdpbusd ports busy at the measured clock; the machine table also
gives the int8 rate a vpdpbusd loop reached in that model's probe and petrel's prefill as a share of
it. On a CPU with AMX petrel's prefill can pass the vpdpbusd bound, which stays the judged one
(issue 4); the machine table gives what an AMX loop of petrel's tile shape reached in the same probe.
The machine table's last column is what petrel repacks at load for its kernels (`petrel info`, run
with the file in the page cache): the cost of not caching the repacked layout on disk.
The decode bound is a DRAM bound: a model smaller than the last-level cache (SmolLM2, 92 MiB) can
partly decode from cache and pass it; for the 1.5B shapes (829 MiB and 1.6 GiB) it holds.

"""


def busy_note(run):
    return f"MARKED: load average {run['loadavg']} above the core count" if run.get("busy") else ""


def report(a, results, meta):
    L = []
    L.append("| model | test | petrel t/s | llama.cpp t/s | petrel / llama.cpp | same-ISA petrel t/s "
             "| same-ISA petrel / llama.cpp | petrel % of bound | llama.cpp % of bound | bound t/s | issue-4 target |")
    L.append("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    rss_lines = ["| model | petrel peak RSS | llama.cpp peak RSS | petrel / llama.cpp |", "| --- | ---: | ---: | ---: |"]
    isa_lines = ["| model | petrel (best) | petrel (same ISA as llama.cpp) | llama.cpp |", "| --- | --- | --- | --- |"]
    for m in results:
        rows, rss = summarize(m)
        same = "petrel same-ISA" if "petrel same-ISA" in tool_names(m) else "petrel"
        for row in rows:
            p, l, q = row["petrel"], row["llama.cpp"], row[same]
            same_note = "" if same != "petrel" else " (same run)"
            L.append(f"| {m['name']} | {row['test']} | {fmt(p[0])} ± {fmt(p[1])} | {fmt(l[0])} ± {fmt(l[1])} "
                     f"| {fmt(row['ratio'])}x | {fmt(q[0])} ± {fmt(q[1])}{same_note} | {fmt(row[same + ' ratio'])}x "
                     f"| {pct(row['petrel share'])} | {pct(row['llama.cpp share'])} "
                     f"| {fmt(row['petrel bound'], '.1f')} | {target_note(m['name'], row)} |")
        rp, rl = rss["petrel"], rss["llama.cpp"]
        rss_lines.append(f"| {m['name']} | {rp / 2**20:.0f} MiB | {rl / 2**20:.0f} MiB | "
                         f"{fmt(rp / rl if rl else float('nan'))}x |")
        paths = isa_paths(m)
        same_path = paths[same] + (" (the best run: it shares llama.cpp's ISA)" if same == "petrel" else
                                   " (PETREL_CPU=avx512vnni)")
        isa_lines.append(f"| {m['name']} | {paths['petrel']} | {same_path} | {paths['llama.cpp']} |")
    mach = ["| model | clock (GHz) | int8 ISA | int8 peak (formula, GOPS) | int8 measured (GOPS) "
            "| petrel pp % of measured int8 | AMX int8 measured (GOPS) | petrel pp % of AMX "
            "| read bandwidth per probe (GB/s) | tg bytes/token "
            "| pp matmul params | petrel repacking at load |",
            "| --- | ---: | --- | ---: | ---: | --- | ---: | --- | --- | ---: | ---: | --- |"]
    for m in results:
        f = m["facts"]
        mach.append(f"| {m['name']} | {m['clock_ghz']:.2f} | {m['isa']} | {m['peak_ops'] / 1e9:.0f} "
                    f"| {m['int8_gops_measured']:.0f} | {measured_peak_shares(m)} "
                    f"| {m.get('amx_gops_measured', 0):.0f} | {measured_peak_shares(m, 'amx_gops_measured')} "
                    f"| {', '.join(f'{b:.1f}' for b in m['bws'])} "
                    f"| {f['tg_bytes_per_token'] / 2**20:.1f} MiB | {f['pp_matmul_params'] / 1e6:.1f} M "
                    f"| {repack_text(m.get('repack'))} |")
    raw = ["| model | round | tool | test | samples (t/s) | bandwidth (GB/s) | load avg | cpu share | wall | "
           "peak RSS | note |",
           "| --- | ---: | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    for m in results:
        for run in m["runs"]:
            if run["error"]:
                raw.append(f"| {m['name']} | {run['round']} | {run['tool']} | - | - | {run['bw_gbs']:.1f} "
                           f"| {run['loadavg']} | {100 * run['cpu_share']:.0f}% | {run['wall']:.0f} s "
                           f"| {run['rss'] / 2**20:.0f} MiB | {run['error'][:120]} |")
            for t, r in run["tests"].items():
                raw.append(f"| {m['name']} | {run['round']} | {run['tool']} | {t} "
                           f"| {', '.join(f'{x:.2f}' for x in r['samples_ts'])} | {run['bw_gbs']:.1f} "
                           f"| {run['loadavg']} | {100 * run['cpu_share']:.0f}% | {run['wall']:.0f} s "
                           f"| {run['rss'] / 2**20:.0f} MiB | {busy_note(run)} |")
    table = "\n".join(L)
    n_runs = sum(len(m["runs"]) for m in results)
    n_busy = sum(1 for m in results for run in m["runs"] if run.get("busy"))
    doc = [
        f"## Run of {meta['date']}: {', '.join(m['name'] for m in results)}",
        "",
        *([f"Note: {a.note}", ""] if a.note else []),
        f"- date: {meta['date']}",
        f"- command: `{meta['command']}`",
        f"- machine: {meta['cpu']} ({meta['ncpu']} CPUs online), Linux {meta['kernel']}, "
        f"load average {meta['load_before']} before, {meta['load_after']} after",
        f"- petrel: git {meta['petrel_rev']}, Release, -DPETREL_NATIVE=ON",
        f"- llama.cpp: llama-cpp-python {meta['llama_pkg']} sdist, build {meta['llama_build']}, "
        f"CPU backend, -DGGML_NATIVE=ON, Release, built for: {a.llama_isa}; llama-bench options "
        f"{' '.join(a.llama_args) or '(defaults)'}",
        f"- CPU has AMX: {'yes (llama.cpp AMX kernels off: they crash at this version, bench/build_llamacpp.sh)' if meta['amx'] else 'no'}",
        f"- tests: -p {a.n_prompt} -n {a.n_gen} -r {a.reps} -t {a.threads}, {a.rounds} rounds alternating "
        "petrel / llama.cpp; every t/s is the mean ± sd of all repetitions of all rounds",
        "",
        "### Speed",
        "",
        table,
        "",
        "### ISA paths (what each side's matrix products ran on)",
        "",
        *isa_lines,
        "",
        f"Load: {n_busy} of {n_runs} engine runs started with the 1-minute load average above the core count "
        f"after waiting up to {a.quiet_wait:.0f} s for it to drop" + (" (marked in the last table)." if n_busy else "."),
        "",
        "### Peak RSS (whole benchmark process, wait4 ru_maxrss)",
        "",
        *rss_lines,
        "",
        "### Machine measurements",
        "",
        *mach,
        "",
        "### Every run",
        "",
        *raw,
        "",
    ]
    return table + "\n\n" + "\n".join(rss_lines), "\n".join(doc)


# RESULTS.md's image part (bench/sd_compare.py, issue 11) starts at this
# heading, below the LLM sections; this script keeps it as it is.
IMAGE_HEAD = "# petrel imagine vs stable-diffusion.cpp"


def split_image_part(path):
    """(the LLM part of an existing report, its image part or "")."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return "", ""
    i = text.find("\n" + IMAGE_HEAD)
    return (text, "") if i < 0 else (text[:i + 1], text[i + 1:])


def other_machines(path, cpu):
    """The sections of an existing report that were run on another CPU: a
    new run replaces the sections of its own machine and keeps the rest."""
    text = split_image_part(path)[0]
    if not text:
        return []
    sections = text.split("\n## Run of ")[1:]
    return ["## Run of " + sec.rstrip("\n") + "\n" for sec in sections if f"- machine: {cpu} (" not in sec]


def main():
    ap = argparse.ArgumentParser(description="petrel vs llama.cpp, side by side (see the module docstring)")
    ap.add_argument("--models", default=",".join(MODELS), help="comma list of: " + ", ".join(MODELS))
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("-p", "--n-prompt", type=int, default=512)
    ap.add_argument("-n", "--n-gen", type=int, default=128)
    ap.add_argument("-r", "--reps", type=int, default=3, help="repetitions per tool run (default 3)")
    ap.add_argument("--rounds", type=int, default=2, help="alternations petrel, llama.cpp per model (default 2)")
    ap.add_argument("--petrel", help="petrel binary to use (default: build it in --build-dir)")
    ap.add_argument("--llama-bench", help="llama-bench binary to use (default: bench/build_llamacpp.sh)")
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build-bench"))
    ap.add_argument("--timeout", type=float, default=3600, help="seconds per engine run (default 3600)")
    ap.add_argument("--results", default=os.path.join(ROOT, "bench", "RESULTS.md"),
                    help="markdown report to write ('' for none)")
    ap.add_argument("--append", action="store_true", help="append a section to --results instead of rewriting it")
    ap.add_argument("--note", default="", help="a line of context written into the report section")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--quiet-wait", type=float, default=300,
                    help="seconds to wait before an engine run for the load average to drop to the core count "
                         "(default 300); a run that starts above it is marked")
    ap.add_argument("--llama-args", default="",
                    help="extra llama-bench options, e.g. '-fa 1' (default: none)")
    a = ap.parse_args()
    names = [n for n in a.models.split(",") if n]
    for n in names:
        if n not in MODELS:
            ap.error(f"unknown model {n!r}")

    a.llama_args = a.llama_args.split()
    a.llama_isa = llama_isa()
    load_before = loadavg()
    petrel = a.petrel or build_petrel(a.build_dir, a.jobs)
    llama = a.llama_bench or build_llama()
    probe_exe = build_probe(a.build_dir)
    paths = {n: model_path(n) for n in names}
    results = [bench_model(a, n, paths[n], petrel, llama, probe_exe) for n in names]

    llama_build = "unknown"
    for m in results:
        for run in m["runs"]:
            for r in run["tests"].values():
                if run["tool"] == "llama.cpp" and r.get("build_commit"):
                    llama_build = f"{r['build_commit']} ({r['build_number']})"
    meta = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "command": " ".join(shlex.quote(c) for c in ["bench/run.sh", *sys.argv[1:]]),
        "cpu": cpu_model(), "ncpu": os.cpu_count(), "kernel": platform.release(),
        "load_before": load_before, "load_after": loadavg(), "petrel_rev": git_rev(),
        "llama_pkg": llama_pkg_version(), "llama_build": llama_build,
        "amx": "amx_int8" in cpu_flags(),
    }
    summary, doc = report(a, results, meta)
    print(summary)
    os.makedirs(os.path.join(CACHE, "results"), exist_ok=True)
    raw_path = os.path.join(CACHE, "results", time.strftime("%Y%m%d-%H%M%S") + ".json")
    with open(raw_path, "w") as f:
        json.dump({"meta": meta, "args": vars(a), "results": results}, f, indent=1)
    log(f"raw results: {raw_path}")
    if a.results:
        llm, image = split_image_part(a.results)  # read before "w" empties the file
        if a.append and llm:
            with open(a.results, "w") as f:
                f.write(llm.rstrip("\n") + "\n\n" + doc + ("\n" + image if image else ""))
        else:
            kept = other_machines(a.results, meta["cpu"])
            with open(a.results, "w") as f:
                f.write(RESULTS_HEAD + doc + "".join("\n" + sec for sec in kept) + ("\n" + image if image else ""))
        log(f"wrote {a.results}")


if __name__ == "__main__":
    main()
