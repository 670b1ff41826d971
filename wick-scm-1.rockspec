-- LuaRocks: `luarocks make` in a checkout builds wick with CMake and installs
-- the Lua files (wick/*.lua), the C module (wick/core.so) and the runner
-- (bin/wick); not libwick and wick.h for C programs (`cmake --install`, README).
-- Needs the Debian packages of tools/install-deps.sh (BLIS or OpenBLAS, zlib,
-- LuaJIT's headers); the CUDA backend is built when nvcc is found.
rockspec_format = "3.0"
package = "wick"
version = "scm-1"
source = {
   url = "git+file://.", -- `luarocks make` builds the checkout it runs in
}
description = {
   summary = "Tensors and devices from a C core, scripted from LuaJIT",
   detailed = [[
wick is a tensor runtime: a C core (libwick) with CPU and CUDA backends and
autograd, a Lua binding (require("wick")) with nn and optim modules, and a
runner (bin/wick).
]],
   license = "MIT",
}
dependencies = {
   "lua >= 5.1",
}
build = {
   type = "cmake",
   variables = {
      CMAKE_INSTALL_PREFIX = "$(PREFIX)",
      CMAKE_BUILD_TYPE = "Release",
      WICK_LUA_INSTALL_DIR = "$(LUADIR)",
      WICK_LUA_CINSTALL_DIR = "$(LIBDIR)",
      -- the rock is the Lua library; C hosts use `cmake --install` (README)
      WICK_INSTALL_C_API = "OFF",
   },
}
