#!/usr/bin/env bash
# bench/distributed.sh: issue 15's benchmarks, side by side in one run, 2
# processes on this machine, one thread per rank on every side:
#  1. all_reduce bus bandwidth, float32: wick's dist.all_reduce
#     (bench/distributed_allreduce.lua) against raw MPI_Allreduce on the same
#     buffers (bench/distributed_allreduce_mpi.c, compiled here with mpicc; goal
#     wick >= 0.95x) and against PyTorch's torch.distributed with gloo
#     (bench/distributed_allreduce_torch.py; goal: wick faster at every size).
#     busbw = bytes / time * 2(n-1)/n. Each round runs raw and wick back to back
#     per size (order alternating) and PyTorch once over all sizes (first, in
#     the middle or last in turn); medians over ROUNDS. A second table times
#     raw MPI_Allreduce inside wick's own processes (LuaJIT's FFI) on the same tensor's memory, PAIRS
#     batches alternating with wick's: one process, one moment, so other
#     processes' load on a shared machine affects both sides alike.
#  2. one Fashion-MNIST MLP epoch under DDP (bench/distributed_mlp.lua against
#     bench/distributed_mlp_torch.py, gloo): time per epoch (goal wick <= 0.7x),
#     both test accuracies (same within a point), and the share of wick's bucket
#     all-reduce time hidden behind backward, from ddp:comm_stats() (goal >= 50%
#     with bucket_cap_mb = 1): hidden = 1 - exposed wait / all-reduce time.
# mpirun starts every side's two processes with the same binding (BIND); the
# PyTorch processes only take their rank from mpirun and talk over gloo (TCP).
#
#   bench/distributed.sh [build-dir]
# Environment: ROUNDS=3  SIZES="4096 65536 1048576 16777216 268435456" (bytes)
#   MIN_TIME=0.2 (seconds a timed batch of calls must last; batches double)
#   SAMPLES=0 (training images per epoch, 0 = all 60,000)  EPOCHS=1
#   PAIRS=3 (alternating batches per side in the in-process table)
#   BUCKET_MB=1  PARTS="allreduce mlp"  BIND=core (mpirun --bind-to, its default for 2 ranks)
#   PYTHON=$HOME/.cache/wick-torch-venv/bin/python
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$(cd "${1:-${BUILD_DIR:-$ROOT/build}}" && pwd)
PYTHON=${PYTHON:-$HOME/.cache/wick-torch-venv/bin/python}
ROUNDS=${ROUNDS:-3}
SIZES=${SIZES:-"4096 65536 1048576 16777216 268435456"}
MIN_TIME=${MIN_TIME:-0.2}
SAMPLES=${SAMPLES:-0}
EPOCHS=${EPOCHS:-1}
BUCKET_MB=${BUCKET_MB:-1}
PARTS=${PARTS:-"allreduce mlp"}
BIND=${BIND:-core}
cd "$ROOT"
[ -x "$BUILD/wick" ] || { echo "distributed.sh: no $BUILD/wick (build wick with MPI first)" >&2; exit 1; }
command -v mpicc >/dev/null && command -v mpirun >/dev/null || { echo "distributed.sh: needs mpicc and mpirun (openmpi-bin, libopenmpi-dev)" >&2; exit 1; }

export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 BLIS_NUM_THREADS=1
export MASTER_ADDR=127.0.0.1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mpicc -O2 -o "$TMP/allreduce_mpi" bench/distributed_allreduce_mpi.c
PORT=$((20000 + RANDOM % 20000))
mpi() { # command... : two ranks, same binding and thread pins for every side (gloo on port PORT)
  MASTER_PORT=$PORT mpirun --allow-run-as-root --oversubscribe --bind-to "$BIND" -np 2 \
    -x OMP_NUM_THREADS -x OPENBLAS_NUM_THREADS -x MKL_NUM_THREADS -x BLIS_NUM_THREADS \
    -x MASTER_ADDR -x MASTER_PORT "$@"
}
median() { # file key column [size]: median of column `column` over the lines whose first field is key (and second size)
  awk -v k="$2" -v c="$3" -v s="${4:-}" '$1 == k && (s == "" || $2 == s) { print $c }' "$1" | sort -g |
    awk '{ v[NR] = $1 } END { if (NR) printf "%.9g\n", (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print "-"; else printf "%.2f", a / b }'; }
human() { awk -v b="$1" 'BEGIN { if (b >= 1048576) printf "%g MiB", b / 1048576; else if (b >= 1024) printf "%g KiB", b / 1024; else printf "%d B", b }'; }

run_ar() { # side bytes round: one all-reduce run of one size -> "bytes seconds calls round" in $TMP/ar.side
  case $1 in
    raw) mpi "$TMP/allreduce_mpi" "$MIN_TIME" "$2" ;;
    rawmt) THREAD_LEVEL=multiple mpi -x THREAD_LEVEL "$TMP/allreduce_mpi" "$MIN_TIME" "$2" ;;
    wick) mpi "$BUILD/wick" bench/distributed_allreduce.lua "$MIN_TIME" "$2" | tee -a "$TMP/ar.wick.raw" ;;
  esac | awk -v r="$3" '$1 == "allreduce" { print $2, $3, $4, r }' >>"$TMP/ar.$1"
}
run_torch_ar() { # round: PyTorch over all sizes (one start)
  mpi "$PYTHON" bench/distributed_allreduce_torch.py "$MIN_TIME" $SIZES |
    awk -v r="$1" '$1 == "allreduce" { print $2, $3, $4, r }' >>"$TMP/ar.torch"
}

echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg) (other processes share these cores)"
trap 'echo "load average at the end: $(cut -d" " -f1-3 /proc/loadavg)"; rm -rf "$TMP"' EXIT
CPU=$(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -1)
echo "CPU: $CPU ($(getconf _NPROCESSORS_ONLN) cores); 2 ranks x 1 thread (OMP/OPENBLAS/MKL/BLIS_NUM_THREADS=1, wick.set_num_threads(1), torch.set_num_threads(1))"
echo "mpirun --bind-to $BIND -np 2 ($(mpirun --version 2>/dev/null | head -1)); PyTorch $("$PYTHON" -c 'import torch; print(torch.__version__)') gloo; $ROUNDS rounds, sides alternating"

for part in $PARTS; do
  case $part in
    allreduce)
      echo
      echo "all_reduce float32, sum, 2 ranks: sizes $SIZES bytes, batches of 1, 2, 4, ... calls until one lasts ${MIN_TIME} s"
      # each round: PyTorch once over all sizes (its start costs seconds), and per
      # size raw MPI and wick back to back (order alternating), so that every
      # wick / raw pair ran under the same load; raw and wick start first or
      # second in turn, PyTorch first, in the middle or last
      for r in $(seq "$ROUNDS"); do
        torch_at=$((r % 3))
        [ "$torch_at" = 0 ] && { PORT=$((PORT + 1)); run_torch_ar "$r"; }
        i=0
        for s in $SIZES; do
          i=$((i + 1))
          if [ $(((r + i) % 2)) = 0 ]; then run_ar raw "$s" "$r"; run_ar wick "$s" "$r"; run_ar rawmt "$s" "$r"
          else run_ar rawmt "$s" "$r"; run_ar wick "$s" "$r"; run_ar raw "$s" "$r"; fi
          [ "$torch_at" = 1 ] && [ "$i" = 2 ] && { PORT=$((PORT + 1)); run_torch_ar "$r"; }
        done
        [ "$torch_at" = 2 ] && { PORT=$((PORT + 1)); run_torch_ar "$r"; }
      done
      printf '| size | raw MPI us | raw MPI, THREAD_MULTIPLE us | wick us | PyTorch gloo us | raw busbw GB/s | wick busbw GB/s | gloo busbw GB/s | wick / raw busbw (goal >= 0.95) | wick / raw at wick'"'"'s thread level | wick / gloo busbw (goal > 1) |\n'
      printf '|---|---|---|---|---|---|---|---|---|---|---|\n'
      pair() { # raw-file size: the median over rounds of each round's pair (raw time / wick time)
        awk -v s="$2" 'FNR == NR { if ($1 == s) raw[$4] = $2; next } $1 == s && ($4 in raw) { print raw[$4] / $2 }' \
          "$1" "$TMP/ar.wick" | sort -g | awk '{ v[NR] = $1 } END { if (NR) printf "%.2f", (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2); else print "-" }'
      }
      for s in $SIZES; do
        m=$(median "$TMP/ar.raw" "$s" 2); mt=$(median "$TMP/ar.rawmt" "$s" 2); w=$(median "$TMP/ar.wick" "$s" 2); t=$(median "$TMP/ar.torch" "$s" 2)
        bw() { awk -v b="$s" -v t="$1" 'BEGIN { if (t == "") print "-"; else printf "%.2f", b / t * 2 * (2 - 1) / 2 / 1e9 }'; }
        us() { awk -v t="$1" 'BEGIN { if (t == "") print "-"; else printf "%.1f", t * 1e6 }'; }
        printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$(human "$s")" "$(us "$m")" "$(us "$mt")" "$(us "$w")" "$(us "$t")" \
          "$(bw "$m")" "$(bw "$w")" "$(bw "$t")" "$(pair "$TMP/ar.raw" "$s")" "$(pair "$TMP/ar.rawmt" "$s")" "$(ratio "$t" "$w")"
      done
      echo "(times: medians over $ROUNDS rounds; wick / raw: median of the rounds' raw/wick time ratios, each run back to back;"
      echo " raw MPI is a C program with MPI_Init, raw at wick's thread level the same with MPI_Init_thread(MPI_THREAD_MULTIPLE);"
      echo " wick / gloo: gloo's median time / wick's median time)"
      awk '$1 == "checks" { p += $2; f += $3 } END { if (p + f) printf "wick'"'"'s signature checks: %d predicted, %d full (%.1f%% predicted; src/dist/group.c)\n", p, f, 100 * p / (p + f) }' "$TMP/ar.wick.raw"
      if grep -q '^inproc_raw' "$TMP/ar.wick.raw" 2>/dev/null; then
        echo
        echo "the same pair inside wick's processes (raw MPI_Allreduce through LuaJIT's FFI on the memory of wick's own tensor, PAIRS batches alternating with wick's):"
        printf '| size | raw MPI in wick us | wick us | wick / raw busbw |\n|---|---|---|---|\n'
        for s in $SIZES; do
          ir=$(median "$TMP/ar.wick.raw" inproc_raw 3 "$s"); iw=$(median "$TMP/ar.wick.raw" inproc_wick 3 "$s")
          printf '| %s | %s | %s | %s |\n' "$(human "$s")" "$(awk -v t="$ir" 'BEGIN { printf "%.1f", t * 1e6 }')" \
            "$(awk -v t="$iw" 'BEGIN { printf "%.1f", t * 1e6 }')" "$(ratio "$ir" "$iw")"
        done
      fi
      ;;
    mlp)
      echo
      echo "Fashion-MNIST MLP 784-512-256-10 under DDP, 2 ranks x 1 thread, batch 128 per rank, SGD lr 0.1 momentum 0.9 + cosine,"
      echo "DistributedSampler (shuffle, seed 0), samples ${SAMPLES} (0 = all 60,000), $EPOCHS epoch(s), bucket_cap_mb $BUCKET_MB on both sides"
      for r in $(seq "$ROUNDS"); do
        for side in $( [ $((r % 2)) = 1 ] && echo "wick torch" || echo "torch wick"); do
          PORT=$((PORT + 1))
          if [ "$side" = wick ]; then mpi "$BUILD/wick" bench/distributed_mlp.lua "$SAMPLES" "$EPOCHS" "$BUCKET_MB"
          else mpi "$PYTHON" bench/distributed_mlp_torch.py "$SAMPLES" "$EPOCHS" "$BUCKET_MB"; fi >>"$TMP/mlp.$side"
        done
      done
      row() { # name label
        local w t; w=$(median "$TMP/mlp.wick" "$1" 2); t=$(median "$TMP/mlp.torch" "$1" 2)
        printf '| %s | %s | %s | %s |\n' "$2" "${w:--}" "${t:--}" "$(ratio "$w" "$t")"
      }
      printf '| DDP MLP epoch (medians) | wick | PyTorch | wick / PyTorch |\n|---|---|---|---|\n'
      row epoch_s "seconds per epoch (goal ratio <= 0.7)"
      row data_s "of which getting batches from the loader (s)"
      row steps "steps per rank per epoch"
      row accuracy "test accuracy (goal: within 0.01)"
      row loss "mean training loss, last epoch"
      row buckets "DDP buckets (all-reduces per step)"
      w=$(median "$TMP/mlp.wick" in_sync 2)
      printf '| wick ranks end with the same parameters | %s | | |\n' "$([ "$w" = 1 ] && echo yes || echo NO)"
      if grep -q '^hidden' "$TMP/mlp.wick"; then
        for name in allreduce_s wait_s hidden standalone_s hidden_vs_standalone; do
          printf '| wick DDP %s | %s | | |\n' "$name" "$(median "$TMP/mlp.wick" "$name" 2)"
        done
        echo "(hidden = 1 - wait_s / allreduce_s over the epoch, from ddp:comm_stats(); goal >= 0.5 with bucket_cap_mb = 1;"
        echo " hidden_vs_standalone = 1 - wait_s / standalone_s, standalone_s = the same bucket all-reduces timed with nothing else running)"
      else
        echo "(wick's DDP has no comm_stats(): no hidden share)"
      fi
      ;;
    *) echo "distributed.sh: unknown part $part (allreduce, mlp)" >&2; exit 2 ;;
  esac
done
