/* A fixture for ctest layers_refuse_public (tests/layers/README.md): a backend
 * defines a public function; public functions are the core's. Compiled, never
 * linked. */
#include "wick.h"

WICK_API int wick_fixture_public(void) { return 1; }
