/* A fixture for ctest layers_refuse_call (tests/layers/README.md): the app
 * layer calls a function of the binding that is not public, declared by hand
 * (including wick_lua.h would be refused as well). Compiled, never linked. */
#include <wick.h>

int wl_raise_from(void *L, int first_level, const char *msg);

int app_fixture_call(void *L) { return wl_raise_from(L, 0, "forbidden"); }
