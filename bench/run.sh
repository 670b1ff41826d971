#!/usr/bin/env bash
# bench/run.sh [THREADS] — wick against the current PyTorch (PyPI) and the raw limits of this machine.
#
# Builds build/wick and build/bench_limits if needed, then runs, all pinned to
# THREADS threads (default 1): bench/limits.c (raw cblas_sgemm, plain C triad),
# bench/ops.lua (wick), bench/ops_torch.py (PyTorch), ROUNDS times interleaved
# (each program reports medians of its own repeats; the table shows the median
# over the rounds, and the spread max/min - 1 over the rounds as noise), then the
# start-up times (STARTUP_RUNS runs each, median), and prints one table.
# Environment: ROUNDS (default 3), STARTUP_RUNS (default 20), BUILD_DIR, BENCH_OUT.
# Ratios are "how many times better wick is": time(PyTorch) / time(wick) for
# per-op times, rate(wick) / rate(other) for GFLOP/s and GB/s. > 1 means wick wins.
# Raw output of each side is kept in $BENCH_OUT (default build/bench).
set -euo pipefail

THREADS=${1:-${THREADS:-1}}
STARTUP_RUNS=${STARTUP_RUNS:-20}
ROUNDS=${ROUNDS:-3}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD_DIR:-$ROOT/build}
OUT=${BENCH_OUT:-$BUILD/bench}
PYTHON=${PYTHON:-$HOME/.cache/wick-torch-venv/bin/python} # the current PyTorch from PyPI: ../shared/bench/setup-torch.sh makes it

export THREADS OMP_NUM_THREADS=$THREADS OPENBLAS_NUM_THREADS=$THREADS MKL_NUM_THREADS=$THREADS

# ---- build if needed ----
mkdir -p "$BUILD"
if [ ! -f "$BUILD/Makefile" ]; then (cd "$BUILD" && cmake "$ROOT" >/dev/null); fi
if ! (cd "$BUILD" && make wick_runner bench_limits >/dev/null); then
  echo "bench/run.sh: build failed" >&2
  exit 1
fi
mkdir -p "$OUT"

echo "# threads=$THREADS  $(date -u +%Y-%m-%dT%H:%M:%SZ)  load average: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

# ---- the three benchmark programs, interleaved over ROUNDS rounds ----
rm -f "$OUT/limits.$THREADS".*.tsv "$OUT/wick.$THREADS".*.tsv "$OUT/torch.$THREADS".*.tsv
for round in $(seq "$ROUNDS"); do
  echo "# round $round/$ROUNDS: limits, wick, pytorch" >&2
  "$BUILD/bench_limits" "$THREADS" >"$OUT/limits.$THREADS.$round.tsv"
  (cd "$ROOT" && "$BUILD/wick" bench/ops.lua "$THREADS") >"$OUT/wick.$THREADS.$round.tsv"
  (cd "$ROOT" && "$PYTHON" bench/ops_torch.py "$THREADS") >"$OUT/torch.$THREADS.$round.tsv"
done

# ---- start-up: one line per run; the table takes the median ----
startup() { # name, command...
  local name=$1; shift
  local t0 t1
  "$@" >/dev/null 2>&1 # warm the page cache
  for _ in $(seq "$STARTUP_RUNS"); do
    t0=$(date +%s%N)
    "$@" >/dev/null 2>&1
    t1=$(date +%s%N)
    awk -v name="$name" -v ns=$(( t1 - t0 )) 'BEGIN { printf "%s\t%.6g\n", name, ns * 1e-9 }'
  done
}
echo "# start-up..." >&2
{
  startup startup_wick "$BUILD/wick" -e ''
  startup startup_wick_require "$BUILD/wick" -e 'require("wick")'
  startup startup_python "$PYTHON" -c ''
  startup startup_torch "$PYTHON" -c 'import torch'
} >"$OUT/startup.$THREADS.tsv"

# ---- the table ----
"$PYTHON" - "$THREADS" "$OUT" "$ROUNDS" <<'EOF'
import statistics
import sys

threads, out, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
spread = {}

def load(kind, per_round=True):
    files = ["%s/%s.%s.%d.tsv" % (out, kind, threads, r) for r in range(1, rounds + 1)] if per_round \
        else ["%s/%s.%s.tsv" % (out, kind, threads)]
    vals = {}
    for path in files:
        for line in open(path):
            if line.strip() and not line.startswith("#"):
                k, v = line.split("\t")[:2]
                vals.setdefault(k, []).append(float(v))
    spread[kind] = {k: max(v) / min(v) - 1 for k, v in vals.items() if min(v) > 0}
    return {k: statistics.median(v) for k, v in vals.items()}

L, W, T, S = load("limits"), load("wick"), load("torch"), load("startup", per_round=False)

def us(s):
    return "%.3f us" % (s * 1e6)

def ms(s):
    return "%.1f ms" % (s * 1e3)

rows = []
def noise(*pairs):
    parts = []
    for kind, key in pairs:
        v = spread.get(kind, {}).get(key) if key else None
        parts.append("%.0f%%" % (v * 100) if v is not None else "-")
    return "/".join(parts)

def row(name, w, t, lim, fmt, kind, goal_t=None, goal_l=None, note="", keys=(None, None, None),
        rt=None, rl=None):
    """kind 'time': lower is better; 'rate': higher is better. rt, rl: ratios given directly."""
    def ratio(x, y):  # > 1: wick better
        if x is None or y is None:
            return None
        return (y / x) if kind == "time" else (x / y)
    rt = ratio(w, t) if rt is None else rt
    rl = ratio(w, lim) if rl is None else rl
    goals, met = [], []
    if goal_t is not None:
        goals.append(">=%gx PyTorch" % goal_t if goal_t != 1 else "not slower than PyTorch")
        met.append(rt is not None and rt >= goal_t)
    if goal_l is not None:
        goals.append(">=%d%% of limit" % round(goal_l * 100))
        met.append(rl is not None and rl >= goal_l)
    status = "-" if not met else ("met" if all(met) else "NOT MET")
    rows.append([name, fmt(w) if w is not None else "?", fmt(t) if t is not None else "?",
                 fmt(lim) if lim is not None else "-",
                 "%.2fx" % rt if rt is not None else "-", "%.0f%%" % (rl * 100) if rl is not None else "-",
                 "; ".join(goals) + note if goals else ("(info)" + note), status,
                 noise(*keys) if keys and isinstance(keys[0], tuple)
                 else noise(("wick", keys[0]), ("torch", keys[1]), ("limits", keys[2]))])

g = lambda k: W.get(k)
gf = lambda v: "%.1f GFLOP/s" % v
gb = lambda v: "%.2f GB/s" % v
def k3(w, t=None, l=None):
    return (w, t if t is not None else w, l)

row("add_ (in-place) 1 elem", g("add_inplace_1"), T.get("add_inplace_1"), None, us, "time", goal_t=10,
    keys=k3("add_inplace_1"))
row("add (out-of-place) 1 elem", g("add_1"), T.get("add_1"), None, us, "time", keys=k3("add_1"))
row("mm 4x4", g("mm_4x4"), T.get("mm_4x4"), None, us, "time", goal_t=5, keys=k3("mm_4x4"))
# matmul: the absolute GFLOP/s of separate processes drift with the load of the
# machine, so the ratios come from the paired in-process measurements: "vs limit"
# is matmul_N_vs_sgemm (wick against raw cblas_sgemm timed alternately in the
# same process) and "vs PyTorch" the quotient of both sides' paired ratios.
for n in (256, 512, 1024, 2048):
    pw, pt = W.get("matmul_%d_vs_sgemm" % n), T.get("matmul_%d_vs_sgemm" % n)
    row("matmul %d (float32)" % n, g("matmul_%d" % n), T.get("matmul_%d" % n), L.get("sgemm_%d" % n), gf, "rate",
        goal_l=0.9, rl=pw, rt=(pw / pt if pw and pt else None),
        note=" (limit: cblas_sgemm; ratios paired, PyTorch's own: %s)" % ("%.0f%%" % (pt * 100) if pt else "?"),
        keys=(("wick", "matmul_%d_vs_sgemm" % n), ("torch", "matmul_%d_vs_sgemm" % n), ("limits", "sgemm_%d" % n)))
row("matmul 512 (bfloat16)", g("matmul_bf16_512"), T.get("matmul_bf16_512"), None, gf, "rate",
    keys=k3("matmul_bf16_512"))
for op in ("add", "mul", "relu"):
    row("%s 16M (out-of-place)" % op, g("%s_16M" % op), T.get("%s_16M" % op), L.get("triad_16M"), gb, "rate",
        goal_t=1, goal_l=0.8, note=" (limit: C triad, warm output)", keys=k3("%s_16M" % op, None, "triad_16M"))
row("exp 16M (out-of-place, float32)", g("exp_16M"), T.get("exp_16M"), None, gb, "rate", keys=k3("exp_16M"))
row("grid_sample fwd (DETR size, float32)", g("grid_sample_fwd"), T.get("grid_sample_fwd"), None, ms, "time",
    keys=k3("grid_sample_fwd"))
row("grid_sample fwd+bwd (DETR size, float32)", g("grid_sample_fwd_bwd"), T.get("grid_sample_fwd_bwd"), None, ms, "time",
    keys=k3("grid_sample_fwd_bwd"))
row("add_ 16M (in-place)", g("add_inplace_16M"), T.get("add_inplace_16M"), L.get("triad_16M"), gb, "rate",
    note=" (limit: C triad, warm output)", keys=k3("add_inplace_16M", None, "triad_16M"))
row("add_ 16M (in-place) vs C a[i]+=b[i]", g("add_inplace_16M"), T.get("add_inplace_16M"), L.get("inplace_16M"),
    gb, "rate", keys=k3("add_inplace_16M", None, "inplace_16M"))
row("add 16M vs C triad into fresh malloc", g("add_16M"), T.get("add_16M"), L.get("triad_fresh_16M"), gb, "rate",
    note=" (limit: page faults included)", keys=k3("add_16M", None, "triad_fresh_16M"))
row("add 16M vs same, MADV_HUGEPAGE", g("add_16M"), T.get("add_16M"), L.get("triad_fresh_thp_16M"), gb, "rate",
    keys=k3("add_16M", None, "triad_fresh_thp_16M"))
def sk(name):
    return (("startup", name), ("startup", "startup_torch"))

row("start-up: wick -e '' vs import torch", S.get("startup_wick"), S.get("startup_torch"), None, ms, "time",
    goal_t=1, note=" (no goal number given)", keys=sk("startup_wick"))
row("start-up: wick -e 'require(\"wick\")'", S.get("startup_wick_require"), S.get("startup_torch"), None, ms, "time",
    keys=sk("startup_wick_require"))
row("start-up: python3 -c '' (reference)", S.get("startup_python"), S.get("startup_torch"), None, ms, "time",
    keys=sk("startup_python"))

head = ["benchmark", "wick", "PyTorch", "raw limit", "vs PyTorch", "vs limit", "goal", "met",
        "spread w/t/l"]
widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
print("threads = %s, median of %d rounds; ratios > 1x / > 100%% mean wick is better; times are per op;"
      % (threads, rounds))
print("spread = max/min - 1 over the rounds, for wick/PyTorch/limit (start-up: over its runs, wick/torch;")
print("matmul: of the paired ratios wick/PyTorch, then of the standalone sgemm GFLOP/s)")
line = lambda r: "| " + " | ".join(str(c).ljust(w) for c, w in zip(r, widths)) + " |"
print(line(head))
print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
for r in rows:
    print(line(r))
EOF
