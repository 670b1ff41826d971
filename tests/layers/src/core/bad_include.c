/* A fixture for ctest layers_refuse_include (tests/layers/README.md): the core
 * must not include a backend's headers. Never compiled. */
#include "../cpu/cpu.h"

int core_fixture(void) { return cpu_fixture(); }
