/* Fixture of ctest layers_refuse_plain_function: a binding function defined
 * without WL_FUNCTION (so without the profiler's hook). Never compiled. */
static int l_plain(lua_State *L) {
    (void)L;
    return 0;
}
