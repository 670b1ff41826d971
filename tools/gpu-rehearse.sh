#!/usr/bin/env bash
# tools/gpu-rehearse.sh [TIER]: rehearses a device run of tools/gpu-check.sh here,
# without a GPU, before spending device time on it (run tools/gpu-prepare.sh
# first). As on the device machine:
#
#   - only what a device run carries goes along: the working tree (tracked and
#     untracked-not-ignored files, as the device tool sends it) plus .devdeps/
#     and build-gpu/, copied to a fresh folder elsewhere (so no RPATH or
#     relative path into this checkout can help);
#   - in a private mount namespace (unshare -m, needs root), the system's Lua
#     (luajit, busted, the Lua modules), OpenBLAS, libedit, libbsd, libmd,
#     libgfortran, libquadmath and Open MPI are hidden (/dev/null or an empty folder
#     mounted over them) once `source .devdeps/env.sh` has unpacked the
#     packages afresh into an empty /opt (dpkg itself needs libmd);
#   - then `OUT=... tools/gpu-check.sh TIER` (default quick).
#
# Then it checks: no shared library of the runner, the C tests, luajit or a Lua
# C module resolves outside the carried folders, glibc/libstdc++ and the CUDA
# driver (ldd under env.sh's environment); OUT holds exactly summary.md and
# gpu-check-logs.tar.gz (<= 8 files, each <= 16 MiB, names the device tool
# returns); standard output ends with the summary; the run took less than the
# tier's budget (480 s for quick). The GPU parts report themselves skipped or
# pending here. Exit status 0 when every check holds (the steps' own results
# are in the summary: a failing spec is gpu-check's news, not the rehearsal's).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
TIER=${1:-quick}
BUDGET=${BUDGET_S:-480}

if [ "${1:-}" != --inside ]; then
  for d in .devdeps build-gpu; do
    [ -d "$d" ] || { echo "gpu-rehearse: no $d/: run tools/gpu-prepare.sh first" >&2; exit 1; }
  done
  [ "$(id -u)" = 0 ] && command -v unshare >/dev/null || { echo "gpu-rehearse: needs root and unshare" >&2; exit 1; }
  DEST=$(mktemp -d /tmp/wick-rehearse.XXXXXX)
  # what the device tool sends: tracked and untracked-not-ignored files, plus the carried folders
  { git ls-files -z; git ls-files -z -o --exclude-standard; } | tar -cf - --ignore-failed-read --null -T - .devdeps build-gpu 2>/dev/null |
    tar -xf - -C "$DEST"
  carried=$(du -sk "$DEST" | awk '{ print int($1 / 1024) }')
  echo "rehearse: copied to $DEST ($carried MiB with the carried folders; the limit is 64 MiB)"
  exec unshare -m bash "$DEST/tools/gpu-rehearse.sh" --inside "$TIER" "$carried"
fi

# ---- inside the private mount namespace, in the copy ----
TIER=${2:-quick}
CARRIED=${3:-0}
FAIL=0
no() { echo "rehearse: FAIL: $*" >&2; FAIL=$((FAIL + 1)); }

mount --make-rprivate / 2>/dev/null || true
mount -t tmpfs none /opt
OUTDIR=$(mktemp -d /tmp/wick-rehearse-out.XXXXXX)
STDOUT=$OUTDIR.stdout
set +e
# unpacks the packages into the empty /opt/devdeps (with the system's dpkg,
# which needs libmd: hidden only afterwards)
# shellcheck disable=SC1091
source .devdeps/env.sh
set -e
L=/usr/lib/x86_64-linux-gnu
hidden=""
for f in $L/libedit.so.2 $L/libbsd.so.0 $L/libmd.so.0 $L/libluajit-5.1.so.2 $L/libgfortran.so.5 $L/libquadmath.so.0 \
         $L/libopenblas*.so* $L/openblas*/lib*.so* $L/blas/lib*.so* $L/lapack/lib*.so* \
         /usr/bin/luajit* /usr/bin/busted /usr/local/bin/busted /usr/local/bin/luajit* \
         $L/libmpi.so.40 $L/libopen-pal.so.40 $L/libopen-rte.so.40 $L/libpmix.so.2 $L/libhwloc.so.15 \
         $L/libfabric.so.1 $L/libucp.so.0 $L/libevent_core-2.1.so.7 /usr/bin/orterun /usr/bin/orted; do
  [ -e "$f" ] || continue
  r=$(realpath "$f")
  [ -f "$r" ] && mount --bind /dev/null "$r" && hidden="$hidden $(basename "$f")"
done
for d in /usr/share/lua /usr/lib/x86_64-linux-gnu/lua /usr/local/share/lua /usr/local/lib/lua \
         /usr/lib/x86_64-linux-gnu/openmpi /etc/openmpi /usr/share/openmpi; do
  [ -d "$d" ] && mount -t tmpfs none "$d" && hidden="$hidden $d/"
done
echo "rehearse: hidden:$hidden"

set +e
t0=$(date +%s)
OUT=$OUTDIR tools/gpu-check.sh "$TIER" >"$STDOUT"
rc=$?
secs=$(($(date +%s) - t0))
set -e
echo "rehearse: tools/gpu-check.sh $TIER exited $rc after $secs s (budget $BUDGET s)"

# every shared library resolves to what was carried, glibc/libstdc++ or the driver
# (gpu-check.sh's search path: the build and the packages' /lib before env.sh's)
export LD_LIBRARY_PATH="$PWD/build-gpu:/opt/devdeps/lib/x86_64-linux-gnu:$LD_LIBRARY_PATH"
base='/(ld-linux-x86-64|libc|libm|libpthread|libdl|librt|libresolv|libutil|libstdc\+\+|libgcc_s|libcuda)\.so'
for f in build-gpu/wick build-gpu/test_* "$(command -v luajit)" $(find /opt/devdeps/usr/lib -path '*lua/5.1/*.so'); do
  [ -f "$f" ] || continue
  while read -r line; do
    case $line in
      *"not found"*) no "$f: $line" ;;
      *"=> /opt/devdeps/"* | *"=> $PWD/build-gpu/"*) ;;
      *"=> "*) echo "$line" | grep -qE "$base" || no "$f: $line (not carried)" ;;
    esac
  done < <(ldd "$f" 2>&1)
done
# the runner really loads the carried LuaJIT and libedit (not the hidden system ones)
LD_DEBUG=libs build-gpu/wick -e 'require("wick")' 2>&1 | grep -E 'calling init: .*(luajit|libedit|libbsd|libmd|openblas|libmpi|libopen-pal)' |
  grep -v '/opt/devdeps/' | while read -r l; do no "loaded outside the carried folders: $l"; done || true
echo "rehearse: the runner loads: $(LD_DEBUG=libs build-gpu/wick -e 'require("wick")' 2>&1 |
  sed -n 's/.*calling init: //p' | grep -vE "$base" | paste -sd' ' -)"

# what comes back
files=$(find "$OUTDIR" -type f | sed "s|^$OUTDIR/||" | sort)
echo "rehearse: OUT holds: $(echo "$files" | paste -sd' ' -)"
[ "$files" = "$(printf 'gpu-check-logs.tar.gz\nsummary.md')" ] || no "OUT must hold exactly summary.md and gpu-check-logs.tar.gz"
[ "$(find "$OUTDIR" -type f | wc -l)" -le 8 ] || no "more than 8 files in OUT"
find "$OUTDIR" -type f -size +16M | while read -r f; do no "$f is over 16 MiB"; done
tar -tzf "$OUTDIR/gpu-check-logs.tar.gz" >/dev/null 2>&1 || no "the log archive does not open"
echo "rehearse: logs in the archive: $(tar -tzf "$OUTDIR/gpu-check-logs.tar.gz" 2>/dev/null | grep -c '\.log$')"
[ "$(tail -n 1 "$STDOUT")" = "$(tail -n 1 "$OUTDIR/summary.md")" ] && [ -s "$OUTDIR/summary.md" ] ||
  no "standard output does not end with the summary"
grep -q '^| preflight | ok ' "$OUTDIR/summary.md" || no "the preflight step did not pass"
[ $secs -le "$BUDGET" ] || no "the run took $secs s, over the budget of $BUDGET s"
[ "$CARRIED" -le 64 ] || no "the copy with the carried folders is $CARRIED MiB, over 64 MiB"

echo "---- the summary (as it comes back) ----"
cat "$OUTDIR/summary.md"
echo "----"
echo "rehearse: $CARRIED MiB carried, $secs s, OUT: $OUTDIR; $FAIL check(s) failed"
cd / && case $ROOT in /tmp/wick-rehearse.*) rm -rf "$ROOT" ;; esac # the copy; OUT stays for a look
[ $FAIL -eq 0 ]
