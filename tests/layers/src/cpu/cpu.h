/* A backend's private header (fixture, tests/layers/README.md). */
int cpu_fixture(void);
