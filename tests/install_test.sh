#!/bin/sh
# ctest `install`: `cmake --install` into a temp prefix, then use what it put there
# the way a user would: plain luajit with the usual LUA_PATH/LUA_CPATH, a C
# program built with `pkg-config --cflags --libs wick`, and P/bin/wick.
# Usage: tests/install_test.sh BUILD_DIR SOURCE_DIR [WICK_SANITIZE] [CC]
# Under WICK_SANITIZE=ON the installed wick is ASan-instrumented: luajit (not
# instrumented) gets the ASan runtime through LD_PRELOAD and the C program is
# built with -fsanitize too.
set -eu
build=$1
src=$2
sanitize=${3:-OFF}
cc=${4:-cc}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/wick-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" || { cat "$tmp/install.log"; exit 1; }
p=$tmp/prefix
for f in lib/libwick.a lib/libwick.so include/wick.h lib/pkgconfig/wick.pc bin/wick \
         lib/lua/5.1/wick/core.so share/lua/5.1/wick/init.lua share/lua/5.1/wick/nn/init.lua; do
  [ -e "$p/$f" ] || { echo "FAIL: $f was not installed"; exit 1; }
done

# libwick is the C core alone: no Lua, and (CUDA build) cudart linked in statically
if ldd "$p/lib/libwick.so" | grep -E "libluajit|liblua|libcudart"; then
  echo "FAIL: the installed libwick.so needs the library above"; exit 1
fi

preload=""
sanflags=""
case "$sanitize" in
  ON|on|1|TRUE|true|YES|yes)
    preload=$("$cc" -print-file-name=libasan.so)
    sanflags="-fsanitize=address,undefined"
    export ASAN_OPTIONS="detect_leaks=0:protect_shadow_gap=0"
    ;;
esac

# 1. plain luajit, Lua files and the C module from the prefix only (cd away from
#    the checkout so that nothing is found through ./?.lua)
cd "$tmp"
out=$(LD_PRELOAD="$preload" LUA_PATH="$p/share/lua/5.1/?.lua;$p/share/lua/5.1/?/init.lua;;" \
      LUA_CPATH="$p/lib/lua/5.1/?.so;;" \
      luajit -e 'local wick = require("wick")
                 local core = package.loaded["wick.core"]
                 assert(core, "wick.core not loaded")
                 local nn = require("wick.nn")
                 assert(nn.Linear, "wick.nn has no Linear")
                 print((wick.ones(2, 3) * 2):sum():item())')
[ "$out" = "12" ] || { echo "FAIL: luajit: expected 12, got '$out'"; exit 1; }
echo "ok: luajit require(\"wick\") from the prefix"

# 2. a C host built with pkg-config against the installed libwick.so
cat >"$tmp/host.c" <<'C'
#include <stdio.h>
#include <wick.h>
int main(void) {
    int64_t sizes[2] = {3, 4};
    wick_tensor *t = NULL, *s = NULL;
    double v = 0;
    if (wick_full(&t, 2, sizes, 1.0, wick_default_options()) != WICK_OK ||
        wick_reduce(&s, NULL, WICK_SUM, t, -1, 0, 0) != WICK_OK || wick_item_double(s, &v) != WICK_OK) {
        fprintf(stderr, "wick: %s\n", wick_last_error());
        return 1;
    }
    wick_tensor_release(s);
    wick_tensor_release(t);
    printf("%g\n", v);
    return v == 12.0 ? 0 : 1;
}
C
PKG_CONFIG_PATH="$p/lib/pkgconfig" pkg-config --exists wick || { echo "FAIL: pkg-config does not find wick"; exit 1; }
flags=$(PKG_CONFIG_PATH="$p/lib/pkgconfig" pkg-config --cflags --libs wick)
"$cc" $sanflags -o "$tmp/host" "$tmp/host.c" $flags
out=$(LD_LIBRARY_PATH="$p/lib" "$tmp/host")
[ "$out" = "12" ] || { echo "FAIL: C host: expected 12, got '$out'"; exit 1; }
# it ran against the installed library, not one from the build folder
LD_LIBRARY_PATH="$p/lib" ldd "$tmp/host" | grep -q "$p/lib/libwick.so" ||
  { echo "FAIL: the C host did not load $p/lib/libwick.so"; LD_LIBRARY_PATH="$p/lib" ldd "$tmp/host"; exit 1; }
echo "ok: C host built with pkg-config ($flags)"
# and linked with libwick.a, which needs Libs.private (pkg-config --static)
private=$(PKG_CONFIG_PATH="$p/lib/pkgconfig" pkg-config --static --libs-only-other --libs-only-L wick)
private_l=$(PKG_CONFIG_PATH="$p/lib/pkgconfig" pkg-config --static --libs-only-l wick | sed 's/-lwick\b//')
"$cc" $sanflags -o "$tmp/host_static" "$tmp/host.c" $(PKG_CONFIG_PATH="$p/lib/pkgconfig" pkg-config --cflags wick) \
  "$p/lib/libwick.a" $private $private_l
out=$("$tmp/host_static")
[ "$out" = "12" ] || { echo "FAIL: static C host: expected 12, got '$out'"; exit 1; }
echo "ok: C host linked with libwick.a and pkg-config --static"

# 3. the installed runner finds its Lua files in ../share/lua/5.1
out=$("$p/bin/wick" -e 'print(require("wick").arange(5):sum():item())')
[ "$out" = "10" ] || { echo "FAIL: $p/bin/wick: expected 10, got '$out'"; exit 1; }
echo "ok: $p/bin/wick -e"
