#!/usr/bin/env bash
# bench/run.sh [THREADS] — wick against PyTorch 1.13 and the raw limits of this machine.
#
# Builds build/wick and build/bench_limits if needed, then runs, all pinned to
# THREADS threads (default 1): bench/limits.c (raw cblas_sgemm, plain C triad),
# bench/ops.lua (wick), bench/ops_torch.py (PyTorch), and the start-up times
# (STARTUP_RUNS runs each, median), and prints one table.
# Ratios are "how many times better wick is": time(PyTorch) / time(wick) for
# per-op times, rate(wick) / rate(other) for GFLOP/s and GB/s. > 1 means wick wins.
# Raw output of each side is kept in $BENCH_OUT (default build/bench).
set -euo pipefail

THREADS=${1:-${THREADS:-1}}
STARTUP_RUNS=${STARTUP_RUNS:-20}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD_DIR:-$ROOT/build}
OUT=${BENCH_OUT:-$BUILD/bench}
PYTHON=/usr/bin/python3

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

# ---- the three benchmark programs ----
echo "# limits..." >&2
"$BUILD/bench_limits" "$THREADS" >"$OUT/limits.$THREADS.tsv"
echo "# wick..." >&2
(cd "$ROOT" && "$BUILD/wick" bench/ops.lua "$THREADS") >"$OUT/wick.$THREADS.tsv"
echo "# pytorch..." >&2
(cd "$ROOT" && "$PYTHON" bench/ops_torch.py "$THREADS") >"$OUT/torch.$THREADS.tsv"

# ---- start-up: median wall time of STARTUP_RUNS runs ----
startup() { # name, command...
  local name=$1; shift
  local times=() t0 t1
  "$@" >/dev/null 2>&1 # warm the page cache
  for _ in $(seq "$STARTUP_RUNS"); do
    t0=$(date +%s%N)
    "$@" >/dev/null 2>&1
    t1=$(date +%s%N)
    times+=($(( t1 - t0 )))
  done
  printf '%s\n' "${times[@]}" | sort -n | awk -v name="$name" '
    { v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%s\t%.6g\n", name, m * 1e-9 }'
}
echo "# start-up..." >&2
{
  startup startup_wick "$BUILD/wick" -e ''
  startup startup_wick_require "$BUILD/wick" -e 'require("wick")'
  startup startup_python "$PYTHON" -c ''
  startup startup_torch "$PYTHON" -c 'import torch'
} >"$OUT/startup.$THREADS.tsv"

# ---- the table ----
"$PYTHON" - "$THREADS" "$OUT/limits.$THREADS.tsv" "$OUT/wick.$THREADS.tsv" "$OUT/torch.$THREADS.tsv" \
  "$OUT/startup.$THREADS.tsv" <<'EOF'
import sys

threads, limits_f, wick_f, torch_f, startup_f = sys.argv[1:]

def load(path):
    d = {}
    for line in open(path):
        if line.strip() and not line.startswith("#"):
            k, v = line.split("\t")[:2]
            d[k] = float(v)
    return d

L, W, T, S = load(limits_f), load(wick_f), load(torch_f), load(startup_f)

def us(s):
    return "%.3f us" % (s * 1e6)

def ms(s):
    return "%.1f ms" % (s * 1e3)

rows = []
def row(name, w, t, lim, fmt, kind, goal_t=None, goal_l=None, note=""):
    """kind 'time': lower is better; 'rate': higher is better."""
    def ratio(x, y):  # > 1: wick better
        if x is None or y is None:
            return None
        return (y / x) if kind == "time" else (x / y)
    rt, rl = ratio(w, t), ratio(w, lim)
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
                 "; ".join(goals) + note if goals else ("(info)" + note), status])

g = lambda k: W.get(k)
gf = lambda v: "%.1f GFLOP/s" % v
gb = lambda v: "%.2f GB/s" % v
row("add_ (in-place) 1 elem", g("add_inplace_1"), T.get("add_inplace_1"), None, us, "time", goal_t=10)
row("add (out-of-place) 1 elem", g("add_1"), T.get("add_1"), None, us, "time")
row("mm 4x4", g("mm_4x4"), T.get("mm_4x4"), None, us, "time", goal_t=5)
for n in (256, 512, 1024, 2048):
    row("matmul %d (float32)" % n, g("matmul_%d" % n), T.get("matmul_%d" % n), L.get("sgemm_%d" % n), gf, "rate",
        goal_l=0.9, note=" (limit: raw cblas_sgemm)")
for op in ("add", "mul", "relu"):
    row("%s 16M (out-of-place)" % op, g("%s_16M" % op), T.get("%s_16M" % op), L.get("triad_16M"), gb, "rate",
        goal_t=1, goal_l=0.8)
row("add_ 16M (in-place)", g("add_inplace_16M"), T.get("add_inplace_16M"), L.get("triad_16M"), gb, "rate")
row("start-up: wick -e '' vs import torch", S.get("startup_wick"), S.get("startup_torch"), None, ms, "time",
    goal_t=1)
row("start-up: wick -e 'require(\"wick\")'", S.get("startup_wick_require"), S.get("startup_torch"), None, ms, "time")
row("start-up: python3 -c '' (reference)", S.get("startup_python"), S.get("startup_torch"), None, ms, "time")

head = ["benchmark", "wick", "PyTorch", "raw limit", "vs PyTorch", "vs limit", "goal", "met"]
widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
print("threads = %s   (ratios > 1 / > 100%% mean wick is better; per-op times are seconds per op)" % threads)
line = lambda r: "| " + " | ".join(str(c).ljust(w) for c, w in zip(r, widths)) + " |"
print(line(head))
print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
for r in rows:
    print(line(r))
EOF
