/* The binding of indexing by keys (src/core/slicing.c): t[key] and
 * t[key] = v for keys that are tables ({k1, k2, ...}: numbers select, {}
 * takes a whole dim, {a, b} and {a, b, step} are inclusive ranges), bool masks
 * and int64 index tensors; plus masked_fill(_), masked_select,
 * masked_scatter(_), index_fill(_), index_copy(_) and index_put(_). Lua
 * indices are 1-based, negative from the end; t[i] with a number reads
 * through view_lua.c's t_get (the hot path) and writes through here. */
#include "wick_lua.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define MAX_EXACT 9007199254740992.0 /* 2^53 */

static int scalar_index(lua_State *L, int idx);

/* An integer of a key (entry `entry`, 1-based, for the message): a number or
 * a 0-dim integer tensor (Whisper's t[{{a, eot_pos}}]). */
static int64_t key_int(lua_State *L, int idx, int entry) {
    if (idx < 0) idx = lua_gettop(L) + idx + 1; /* (scalar_index pushes) */
    if (lua_type(L, idx) != LUA_TNUMBER && !scalar_index(L, idx)) {
        wick_tensor *t = wl_totensor(L, idx);
        int64_t one;
        if (t && wick_tensor_numel(t) == 1 && !wick_dtype_is_floating(wick_tensor_dtype(t)) &&
            !wick_dtype_is_complex(wick_tensor_dtype(t)) && wick_tensor_dtype(t) != WICK_BOOL) {
            /* a one-element integer tensor as a range's end (minGRU's randint(..., (1,))) */
            wl_check(L, wick_item_int64(t, &one));
            return one;
        }
        if (t)
            wl_raise(L, "index: entry %d of the key: a range's ends are integers or one-element integer tensors, got a %s tensor of %d dims",
                     entry, wick_dtype_name(wick_tensor_dtype(t)), wick_tensor_ndim(t));
        wl_raise(L, "index: entry %d of the key: expected integers in a range, got %s", entry, luaL_typename(L, idx));
    }
    lua_Number v = lua_tonumber(L, idx);
    if (v != floor(v) || fabs(v) > MAX_EXACT)
        wl_raise(L, "index: entry %d of the key: expected an integer, got %g", entry, v);
    return (int64_t)v;
}

/* A number selecting along a dim of `size`: the 0-based position. */
static int64_t select_index(lua_State *L, int idx, int64_t size, int dim) {
    lua_Number v = lua_tonumber(L, idx);
    if (v != floor(v)) wl_raise(L, "index: expected an integer index, got %g", v);
    if (v == 0) wl_raise(L, "index 0 is invalid: indices count from 1 (and from -1 backwards)");
    if (v > (lua_Number)size || v < -(lua_Number)size)
        wl_raise(L, "index %.0f is out of bounds for dimension %d with size %lld", v, dim + 1, (long long)size);
    return v > 0 ? (int64_t)v - 1 : (int64_t)v + size;
}

/* {a, b[, step]} at idx, entry `entry` of the key (1-based, for messages),
 * for dim `dim` of `size`. Torch7's rule: both ends inside the dim (negative
 * from the end); {a, a - 1} is empty, {1, 0} and {1, -size - 1} too (Python's
 * t[:-1] of one element is {1, -2}). */
static wick_key_entry range_entry(lua_State *L, int idx, int n, int64_t size, int dim, int entry) {
    lua_rawgeti(L, idx, 1);
    lua_rawgeti(L, idx, 2);
    lua_rawgeti(L, idx, 3);
    int64_t a = key_int(L, -3, entry), b = key_int(L, -2, entry), step = n == 3 ? key_int(L, -1, entry) : 1;
    lua_pop(L, 3);
    char range[96]; /* the range as written: {a, b} or {a, b, step} */
    if (n == 3) snprintf(range, sizeof range, "{%lld, %lld, %lld}", (long long)a, (long long)b, (long long)step);
    else snprintf(range, sizeof range, "{%lld, %lld}", (long long)a, (long long)b);
    if (step <= 0) wl_raise(L, "index: the step of a range must be positive, got %lld (entry %d of the key)", (long long)step, entry);
    if (a == 0) wl_raise(L, "index 0 is invalid: indices count from 1 (and from -1 backwards) (range %s, entry %d of the key)",
                         range, entry);
    int64_t first = a < 0 ? a + size + 1 : a, last = b < 0 ? b + size + 1 : b;
    if (first < 1 || a > size + 1 || b > size || b < -size - 1 || (last == 0 && first != 1) || (first > size && last != size))
        wl_raise(L, "index: the range %s reaches past dimension %d of size %lld (Python's slices, which clamp, are "
                    "wick.slice(start, stop): 0-based, stop excluded)", range, dim + 1, (long long)size);
    if (first > last + 1)
        wl_raise(L, "index: the range %s of dimension %d ends before it starts (size %lld; a table {a, b[, step]} in a key "
                    "is a range: a list of indices goes as an int64 tensor, wick.tensor(list, {dtype = \"int64\"}) or "
                    "wick.stack(tensors))", range, dim + 1, (long long)size);
    int64_t length = last >= first ? (last - first) / step + 1 : 0;
    return (wick_key_entry){0, first - 1, length, step};
}

/* ---- wick.slice: Python's slice object ---- */

static const char SLICE[] = "wick.slice";

static int is_slice(lua_State *L, int idx) {
    if (!lua_getmetatable(L, idx)) return 0;
    luaL_getmetatable(L, SLICE);
    int yes = lua_rawequal(L, -1, -2);
    lua_pop(L, 2);
    return yes;
}

/* an end or step of a slice: nil, an integer, or a one-element integer tensor (as key_int) */
static int slice_part(lua_State *L, int idx, const char *what, int64_t *out) {
    if (lua_isnoneornil(L, idx)) return 0;
    wick_tensor *t = wl_totensor(L, idx);
    if (t && wick_tensor_numel(t) == 1 && !wick_dtype_is_floating(wick_tensor_dtype(t)) &&
        !wick_dtype_is_complex(wick_tensor_dtype(t)) && wick_tensor_dtype(t) != WICK_BOOL) {
        wl_check(L, wick_item_int64(t, out));
        return 1;
    }
    if (t)
        wl_raise(L, "wick.slice: expected an integer or nil for %s, got a %s tensor of %lld element%s (only integer "
                    "tensors of one element are indices)", what, wick_dtype_name(wick_tensor_dtype(t)),
                 (long long)wick_tensor_numel(t), wick_tensor_numel(t) == 1 ? "" : "s");
    lua_Number v = lua_tonumber(L, idx), big = 4611686018427387904.0; /* 2^62: past any size (sys.maxsize) */
    if (lua_type(L, idx) != LUA_TNUMBER || v != floor(v))
        wl_raise(L, "wick.slice: expected an integer or nil for %s, got %s", what,
                 lua_type(L, idx) == LUA_TNUMBER ? "a fraction" : luaL_typename(L, idx));
    *out = (int64_t)(v > big ? big : v < -big ? -big : v);
    return 1;
}

/* wick.slice([start, ]stop[, step]): Python's slice(start, stop, step), an entry of a
 * key: 0-based, stop excluded, nil an open end, negative ends from the end, both
 * clamped to the dim (x[:, -n:] is x[{{}, wick.slice(-n, nil)}] also when n > the
 * size); a table {start =, stop =, step =} with its own metatable */
WL_FUNCTION(m_slice) {
    int n = lua_gettop(L);
    if (n > 3) wl_raise(L, "wick.slice: expected at most 3 arguments (start, stop, step), got %d", n);
    static const char *const names[] = {"start", "stop", "step"};
    int64_t v[3];
    int has[3] = {0, 0, 0};
    for (int i = 0; i < 3; i++) {
        int arg = n == 1 ? (i == 1 ? 1 : 0) : i + 1; /* slice(stop) */
        if (arg) has[i] = slice_part(L, arg, names[i], &v[i]);
    }
    /* (a negative step is Python's: a ModuleList takes it, self.flows[::-1]; a tensor refuses it) */
    if (has[2] && v[2] == 0) wl_raise(L, "wick.slice: slice step cannot be zero");
    lua_createtable(L, 0, 3);
    for (int i = 0; i < 3; i++)
        if (has[i]) {
            lua_pushnumber(L, (lua_Number)v[i]);
            lua_setfield(L, -2, names[i]);
        }
    luaL_getmetatable(L, SLICE);
    lua_setmetatable(L, -2);
    return 1;
}

WL_FUNCTION(slice_tostring) {
    static const char *const names[] = {"start", "stop", "step"};
    lua_pushliteral(L, "slice(");
    for (int i = 0; i < 3; i++) {
        lua_getfield(L, 1, names[i]);
        if (lua_isnil(L, -1)) lua_pushliteral(L, "None");
        else lua_pushfstring(L, "%d", (int)lua_tointeger(L, -1));
        lua_remove(L, -2);
        lua_pushstring(L, i < 2 ? ", " : ")");
    }
    lua_concat(L, 7);
    return 1;
}

/* A wick.slice at idx for a dim of `size`: Python's clamped range. */
static wick_key_entry slice_entry(lua_State *L, int idx, int64_t size) {
    int64_t v[3] = {0, size, 1};
    static const char *const names[] = {"start", "stop", "step"};
    for (int i = 0; i < 3; i++) {
        lua_getfield(L, idx, names[i]); /* (checked again: a field may have been set since wick.slice) */
        slice_part(L, lua_gettop(L), names[i], &v[i]);
        lua_pop(L, 1);
    }
    if (v[2] <= 0) /* (PyTorch's tensors too; a ModuleList takes a negative one) */
        wl_raise(L, "index: a slice's step must be greater than zero, got %lld (t:flip(dim) reverses a tensor)",
                 (long long)v[2]);
    for (int i = 0; i < 2; i++) {
        if (v[i] < 0) v[i] += size;
        v[i] = v[i] < 0 ? 0 : v[i] > size ? size : v[i];
    }
    int64_t length = v[1] > v[0] ? (v[1] - v[0] + v[2] - 1) / v[2] : 0;
    return (wick_key_entry){0, v[0], length, v[2]};
}

/* The table key at idx as entries for t's dims from the first; the entries
 * that are tensors become whole dims, their dims in tp and entries (0-based)
 * in te (count *nt). One
 * entry may be "..." (Python's Ellipsis): as many whole dims as the other
 * entries leave. Returns the number of dims the entries cover. */
/* A 0-dim integer tensor used as an index is the number it holds (PyTorch
 * reads it through __index__: t[ix] is then a view, and t[ix]:add_(v) writes
 * into t). Replaces the value at idx with that number; 1 when it did. */
static int scalar_index(lua_State *L, int idx) {
    wick_tensor *k = wl_totensor(L, idx);
    if (!k || wick_tensor_ndim(k) != 0 || wick_dtype_is_floating(wick_tensor_dtype(k)) ||
        wick_tensor_dtype(k) == WICK_BOOL)
        return 0;
    int64_t v;
    wl_check(L, wick_item_int64(k, &v));
    lua_pushnumber(L, (lua_Number)v);
    lua_replace(L, idx);
    return 1;
}

/* wick.newaxis, Python's None in a key (x[:, None]): a light userdata no other
 * value equals. */
static char newaxis_tag;
static int is_newaxis(lua_State *L, int idx) {
    return lua_type(L, idx) == LUA_TLIGHTUSERDATA && lua_touserdata(L, idx) == &newaxis_tag;
}

/* A 0-dim bool mask at idx that other entries follow (TGN's mask[invalid.squeeze(), 0] of one
 * node): PyTorch's new dim, of size 1 where it holds true, 0 where false; -1: not one */
static int scalar_mask(lua_State *L, int idx, int i, int n) {
    wick_tensor *k = i < n ? wl_totensor(L, idx) : NULL;
    if (!k || wick_tensor_ndim(k) != 0 || (wick_tensor_dtype(k) != WICK_BOOL && wick_tensor_dtype(k) != WICK_UINT8))
        return -1;
    double v = 0;
    wl_check(L, wick_item_double(k, &v));
    return v != 0;
}

/* A key with newaxis entries at kidx: *t becomes a view of it with a size-1 dim
 * where each stands (the dims the entries before it cover counted, "..." as
 * the dims the other entries leave), and the key at kidx a copy with {} (that
 * whole new dim) in their place; a 0-dim mask that other entries follow is
 * one too, with {1, 0} (none of it) where it is false. The views stay on the stack. */
static void expand_newaxis(lua_State *L, int kidx, wick_tensor **t) {
    int n = (int)lua_objlen(L, kidx), count = 0, real = 0, ellipsis = 0;
    for (int i = 1; i <= n; i++) {
        lua_rawgeti(L, kidx, i);
        if (is_newaxis(L, -1) || scalar_mask(L, lua_gettop(L), i, n) >= 0) count++;
        else if (lua_type(L, -1) == LUA_TSTRING && strcmp(lua_tostring(L, -1), "...") == 0) ellipsis = 1;
        else real++;
        lua_pop(L, 1);
    }
    if (!count) return;
    int spread = ellipsis && wick_tensor_ndim(*t) > real ? wick_tensor_ndim(*t) - real : 0, d = 0;
    lua_createtable(L, n, 0);
    int key = lua_gettop(L);
    for (int i = 1; i <= n; i++) {
        lua_rawgeti(L, kidx, i);
        int mask = scalar_mask(L, lua_gettop(L), i, n);
        if (is_newaxis(L, -1) || mask >= 0) {
            lua_pop(L, 1);
            lua_newtable(L);
            if (mask == 0) { /* {1, 0}: none of the new dim */
                lua_pushinteger(L, 1);
                lua_rawseti(L, -2, 1);
                lua_pushinteger(L, 0);
                lua_rawseti(L, -2, 2);
            }
            wick_tensor **slot = wl_new_slot(L);
            wl_check(L, wick_unsqueeze(slot, *t, d++));
            *t = *slot;
            lua_insert(L, key); /* keep the view below the key */
            key++;
        } else {
            d += lua_type(L, -1) == LUA_TSTRING && strcmp(lua_tostring(L, -1), "...") == 0 ? spread : 1;
        }
        lua_rawseti(L, key, i);
    }
    lua_replace(L, kidx);
}

/* x[{mask2d, {}}]: {} entries after a mask of several dims (which covers those
 * dims) take whole dims that the key leaves anyway: the key at kidx without them. */
static void drop_after_mask(lua_State *L, int kidx) {
    int n = (int)lua_objlen(L, kidx), last = n, mask_at = 0;
    for (int i = 1; i <= n && !mask_at; i++) {
        lua_rawgeti(L, kidx, i);
        wick_tensor *k = wl_totensor(L, -1);
        if (k && wick_tensor_ndim(k) > 1 && (wick_tensor_dtype(k) == WICK_BOOL || wick_tensor_dtype(k) == WICK_UINT8))
            mask_at = i;
        lua_pop(L, 1);
    }
    if (!mask_at) return;
    while (last > mask_at) {
        int top = lua_gettop(L);
        lua_rawgeti(L, kidx, last);
        int whole = lua_istable(L, -1) && !wl_totensor(L, -1) && lua_objlen(L, -1) == 0;
        if (whole) { /* {} with no key at all */
            lua_pushnil(L);
            whole = !lua_next(L, top + 1);
        }
        lua_settop(L, top);
        if (!whole) return;
        last--;
    }
    if (last == n) return;
    lua_createtable(L, last, 0);
    for (int i = 1; i <= last; i++) {
        lua_rawgeti(L, kidx, i);
        lua_rawseti(L, -2, i);
    }
    lua_replace(L, kidx);
}

/* A mask of k >= 2 dims beside other tensor entries of the key at kidx
 * (FCOS's gt_classes_targets[foreground_mask, classes[foreground_mask]]): k
 * entries instead, the 1-based coordinates of its positions along each of its
 * dims, as PyTorch reads it. The key becomes a new table. */
static void split_masks(lua_State *L, int kidx, const wick_tensor *t) {
    int n = (int)lua_objlen(L, kidx), tensors = 0, wide = 0;
    for (int i = 1; i <= n; i++) {
        lua_rawgeti(L, kidx, i);
        wick_tensor *k = wl_totensor(L, -1);
        tensors += k != NULL;
        wide += k && wick_tensor_ndim(k) > 1 && (wick_tensor_dtype(k) == WICK_BOOL || wick_tensor_dtype(k) == WICK_UINT8);
        lua_pop(L, 1);
    }
    if (!wide || tensors < 2) return;
    lua_createtable(L, n + WICK_MAX_DIMS, 0);
    int key = lua_gettop(L), at = 0, d = 0;
    for (int i = 1; i <= n; i++) {
        lua_rawgeti(L, kidx, i);
        wick_tensor *k = wl_totensor(L, -1);
        int mn = k ? wick_tensor_ndim(k) : 0;
        if (lua_type(L, -1) == LUA_TSTRING && strcmp(lua_tostring(L, -1), "...") == 0) d = -1; /* (dims unknown after it) */
        if (!(mn > 1 && (wick_tensor_dtype(k) == WICK_BOOL || wick_tensor_dtype(k) == WICK_UINT8))) {
            lua_rawseti(L, key, ++at);
            if (d >= 0) d++; /* (newaxis entries are gone: expand_newaxis ran) */
            continue;
        }
        for (int j = 0; d >= 0 && j < mn; j++) {
            if (d + j >= wick_tensor_ndim(t))
                wl_raise(L, "index: entry %d of the key: a mask of %d dims reaches past the tensor's %d dims", i, mn,
                         wick_tensor_ndim(t));
            if (wick_tensor_sizes(k)[j] != wick_tensor_sizes(t)[d + j])
                wl_raise(L, "index: entry %d of the key: the mask's size %lld at its dim %d does not match the tensor's "
                            "%lld at dim %d",
                         i, (long long)wick_tensor_sizes(k)[j], j + 1, (long long)wick_tensor_sizes(t)[d + j], d + j + 1);
        }
        wick_tensor **pos = wl_new_slot(L), **lin = wl_new_slot(L); /* 0-based positions over the mask's flat
                                                                       * elements, as float64 (exact below 2^53) */
        wl_check(L, wick_mask_positions(pos, k));
        wl_check(L, wick_to(lin, *pos, (wick_options){WICK_FLOAT64, wick_tensor_device(*pos), 0}));
        int64_t stride = 1;
        for (int j = mn - 1; j >= 0; j--) stride *= wick_tensor_sizes(k)[j];
        for (int j = 0; j < mn; j++) { /* coordinate j = (lin / stride_j) mod size_j, plus 1 */
            stride /= wick_tensor_sizes(k)[j];
            wick_tensor **q = wl_new_slot(L), **c = wl_new_slot(L), **one = wl_new_slot(L);
            wl_check(L, wick_binary_scalar(q, WICK_DIV, *lin, (wick_scalar){(double)stride, 1}, 0));
            wl_check(L, wick_unary_(WICK_FLOOR, *q));
            wl_check(L, wick_binary_scalar(c, WICK_REMAINDER, *q, (wick_scalar){(double)wick_tensor_sizes(k)[j], 1}, 0));
            wl_check(L, wick_binary_scalar(one, WICK_ADD, *c, (wick_scalar){1, 1}, 0));
            wick_tensor **idx = wl_new_slot(L);
            wl_check(L, wick_to(idx, *one, (wick_options){WICK_INT64, wick_tensor_device(*one), 0}));
            lua_rawseti(L, key, ++at); /* takes idx */
            lua_pop(L, 3);             /* q, c, one */
        }
        lua_pop(L, 3); /* pos, lin, the mask */
        if (d >= 0) d += mn;
    }
    lua_replace(L, kidx);
}

/* Python's masks inside a key: an entry that is a Lua list of booleans
 * (loralib's lora_ind[enable_lora, :]) is a bool mask; and where the key has
 * other tensor entries too, a 1-D mask is the positions it selects (PyTorch's
 * x[mask, idx], RetinaNet's gt_classes_target[fg, labels[...]]), and one of
 * more dims its coordinates (split_masks). The key at kidx becomes a new table
 * with those entries replaced (the user's is kept). */
static void masks_in_key(lua_State *L, int kidx, const wick_tensor *t) {
    int n = (int)lua_objlen(L, kidx), tensors = 0, changed = 0;
    lua_createtable(L, n, 0);
    int key = lua_gettop(L);
    for (int i = 1; i <= n; i++) {
        lua_rawgeti(L, kidx, i);
        int m = lua_istable(L, -1) && !wl_totensor(L, -1) ? (int)lua_objlen(L, -1) : 0, bools = m > 0;
        for (int j = 1; bools && j <= m; j++) {
            lua_rawgeti(L, -1, j);
            bools = lua_type(L, -1) == LUA_TBOOLEAN;
            lua_pop(L, 1);
        }
        if (bools) { /* the list as a bool tensor on t's device */
            int64_t size = m;
            wick_tensor **host = wl_new_slot(L), **mask = wl_new_slot(L);
            wl_check(L, wick_empty(host, 1, &size, (wick_options){WICK_BOOL, wick_cpu(), 0}));
            unsigned char *b = wick_tensor_data(*host);
            for (int j = 1; j <= m; j++) {
                lua_rawgeti(L, -3, j);
                b[j - 1] = (unsigned char)lua_toboolean(L, -1);
                lua_pop(L, 1);
            }
            wl_check(L, wick_to(mask, *host, (wick_options){WICK_BOOL, wick_tensor_device(t), 0}));
            lua_insert(L, -3); /* the mask where the list was, the slots below it */
            lua_pop(L, 2);
            changed = 1;
        }
        tensors += wl_totensor(L, -1) != NULL;
        lua_rawseti(L, key, i);
    }
    int ellipsis = 0; /* (1-based) the "..." entry, after which entries count from the last dim */
    for (int i = 1; i <= n && !ellipsis; i++) {
        lua_rawgeti(L, key, i);
        if (lua_type(L, -1) == LUA_TSTRING && strcmp(lua_tostring(L, -1), "...") == 0) ellipsis = i;
        lua_pop(L, 1);
    }
    for (int i = 1; tensors > 1 && i <= n; i++) {
        lua_rawgeti(L, key, i);
        wick_tensor *k = wl_totensor(L, -1);
        lua_pop(L, 1);
        if (!k || wick_tensor_ndim(k) != 1 || (wick_tensor_dtype(k) != WICK_BOOL && wick_tensor_dtype(k) != WICK_UINT8))
            continue;
        int d = ellipsis && i > ellipsis ? wick_tensor_ndim(t) - (n - i) - 1 : i - 1;
        if (d >= 0 && d < wick_tensor_ndim(t) && wick_tensor_sizes(k)[0] != wick_tensor_sizes(t)[d])
            wl_raise(L, "index: entry %d of the key: the mask's size %lld does not match the tensor's %lld at dim %d", i,
                     (long long)wick_tensor_sizes(k)[0], (long long)wick_tensor_sizes(t)[d], d + 1);
        wick_tensor **pos = wl_new_slot(L), **one_based = wl_new_slot(L);
        wl_check(L, wick_mask_positions(pos, k));
        wl_check(L, wick_binary_scalar(one_based, WICK_ADD, *pos, (wick_scalar){1, 1}, 0));
        lua_rawseti(L, key, i); /* takes one_based */
        lua_pop(L, 1);          /* pos */
        changed = 1;
    }
    if (changed) lua_replace(L, kidx);
    else lua_pop(L, 1);
    split_masks(L, kidx, t);
}

static int parse_key(lua_State *L, int idx, wick_tensor *t, wick_key_entry *e, int *tp, int *te, int *nt) {
    int n = (int)lua_objlen(L, idx), nd = wick_tensor_ndim(t);
    lua_pushnil(L);
    while (lua_next(L, idx)) { /* only entries 1..n */
        lua_pop(L, 1);
        lua_Number k = lua_type(L, -1) == LUA_TNUMBER ? lua_tonumber(L, -1) : 0;
        if (k < 1 || k > n || k != floor(k))
            wl_raise(L, "index: a key table holds entries 1..n only (numbers and ranges), found the key %s",
                     lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : luaL_typename(L, -1));
    }
    int ellipsis = -1;
    for (int i = 0; i < n; i++) {
        lua_rawgeti(L, idx, i + 1);
        if (lua_type(L, -1) == LUA_TSTRING && strcmp(lua_tostring(L, -1), "...") == 0) {
            if (ellipsis >= 0) wl_raise(L, "index: a key can only have a single ellipsis ('...')");
            ellipsis = i;
        }
        lua_pop(L, 1);
    }
    int real = n - (ellipsis >= 0);
    if (real > nd)
        wl_raise(L, "index: too many indices for tensor of dimension %d (the key has %d entries, one per dim: "
                    "Python's list of indices t[[i, j, ...]] is an int64 tensor key, t[wick.tensor({...}, "
                    "{dtype = \"int64\"})]; Python's None is wick.newaxis: a nil in a Lua table is a hole)", nd, real);
    const int64_t *sizes = wick_tensor_sizes(t);
    *nt = 0;
    int d = 0; /* the dim entry i is for */
    for (int i = 0; i < n; i++, d++) {
        if (i == ellipsis) {
            for (int k = 0; k < nd - real; k++, d++) e[d] = (wick_key_entry){0, 0, sizes[d], 1};
            d--;
            continue;
        }
        lua_rawgeti(L, idx, i + 1);
        int top = lua_gettop(L);
        scalar_index(L, top);
        int ty = lua_type(L, top);
        if (ty == LUA_TNUMBER) {
            e[d] = (wick_key_entry){1, select_index(L, top, sizes[d], d), 1, 1};
        } else if (ty == LUA_TTABLE && is_slice(L, top)) {
            e[d] = slice_entry(L, top, sizes[d]);
        } else if (ty == LUA_TTABLE && !wl_totensor(L, top)) {
            int m = (int)lua_objlen(L, top);
            if (m == 0) e[d] = (wick_key_entry){0, 0, sizes[d], 1};
            else if (m == 2 || m == 3) e[d] = range_entry(L, top, m, sizes[d], d, i + 1);
            else if (m == 1) { /* {i}: Torch7's one-element range {i, i}, Python's h[:, [-1]] */
                lua_createtable(L, 2, 0);
                lua_rawgeti(L, top, 1);
                lua_pushvalue(L, -1);
                lua_rawseti(L, -3, 1);
                lua_rawseti(L, -2, 2);
                e[d] = range_entry(L, lua_gettop(L), 2, sizes[d], d, i + 1);
                lua_pop(L, 1);
            } else
                wl_raise(L, "index: entry %d of the key: a range is {} (all), {i} (the one element i, kept as a dim), "
                            "{first, last} or {first, last, step}, got a table of %d elements (Python's list of "
                            "indices [i, j, ...] is an int64 tensor: wick.tensor({...}, {dtype = \"int64\"}))",
                         i + 1, m);
        } else if (wl_totensor(L, top)) {
            e[d] = (wick_key_entry){0, 0, sizes[d], 1};
            te[*nt] = i;
            tp[(*nt)++] = d;
        } else {
            wl_raise(L, "index: entry %d of the key must be a number, a range table ({}, {first, last}, {first, last, step}), "
                        "a wick.slice, a tensor, \"...\" or wick.newaxis, got %s",
                     i + 1, luaL_typename(L, top));
        }
        lua_pop(L, 1);
    }
    return d;
}

/* The index tensors of a table key (entries tp[0..nt), next to each other,
 * int64; or one bool mask) as one 0-based index over the *group dims they
 * cover: *dim is where those are in the view of the other entries. Leaves its
 * tensors on the stack. */
static wick_tensor *key_tensors(lua_State *L, int kidx, wick_tensor *t, const wick_key_entry *e, const int *tp, const int *te, int nt,
                                int *dim, int *group) {
    const int64_t *sizes = wick_tensor_sizes(t);
    wick_tensor *conv[WICK_MAX_DIMS];
    *dim = tp[0];
    for (int i = 0; i < tp[0]; i++) *dim -= e[i].select;
    lua_rawgeti(L, kidx, te[0] + 1);
    wick_tensor *m = wl_totensor(L, -1);
    wick_dtype md = wick_tensor_dtype(m);
    if (md == WICK_BOOL || md == WICK_UINT8) { /* a mask entry: its positions over the dims it covers */
        if (nt > 1) wl_raise(L, "index: a bool mask inside a key must be its only tensor entry");
        int mn = wick_tensor_ndim(m);
        if (mn != 1 && te[0] + 1 < (int)lua_objlen(L, kidx))
            wl_raise(L, "index: entry %d of the key: a mask of %d dims must be the key's last entry", te[0] + 1, mn);
        if (tp[0] + mn > wick_tensor_ndim(t))
            wl_raise(L, "index: entry %d of the key: a mask of %d dims reaches past the tensor's %d dims", te[0] + 1, mn,
                     wick_tensor_ndim(t));
        for (int d = 0; d < mn; d++)
            if (wick_tensor_sizes(m)[d] != sizes[tp[0] + d])
                wl_raise(L, "index: entry %d of the key: the mask's size %lld at its dim %d does not match the tensor's %lld at dim %d",
                         te[0] + 1, (long long)wick_tensor_sizes(m)[d], d + 1, (long long)sizes[tp[0] + d], tp[0] + d + 1);
        *group = mn;
        wick_tensor **slot = wl_new_slot(L);
        wl_check(L, wick_mask_positions(slot, m));
        return *slot;
    }
    *group = nt;
    for (int j = 0; j < nt; j++) {
        if (tp[j] != tp[0] + j)
            wl_raise(L, "index: the index tensors of a key must be next to each other (entries %d and %d are not)",
                     te[0] + 1, te[j] + 1);
        lua_rawgeti(L, kidx, te[j] + 1);
        wick_tensor *k = wl_totensor(L, -1);
        wick_dtype d = wick_tensor_dtype(k);
        if (d != WICK_INT64 && d != WICK_INT32)
            wl_raise(L, "index: entry %d of the key: a tensor entry must be an int64 or int32 index tensor or a bool mask, got %s%s",
                     te[j] + 1, wick_dtype_name(d), wl_index_dtype_hint(d));
        wick_tensor **slot = wl_new_slot(L);
        wl_check(L, wick_index_from_one_based(slot, k, sizes[tp[j]], tp[j]));
        conv[j] = *slot;
    }
    if (nt == 1) return conv[0];
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_index_linear(slot, nt, (const wick_tensor *const *)conv, sizes + tp[0]));
    return *slot;
}

/* Pushes the key entry for dim d of a parsed key: the key's tensor entry at key position tensor_at
 * (0-based; -1: none), else the number or the range it selects (a whole dim: {}) */
static void push_entry(lua_State *L, int kidx, const wick_key_entry *e, int n, int d, int tensor_at) {
    if (tensor_at >= 0) {
        lua_rawgeti(L, kidx, tensor_at + 1);
    } else if (d < n && e[d].select) {
        lua_pushnumber(L, (lua_Number)(e[d].start + 1));
    } else {
        lua_createtable(L, 3, 0);
        if (d < n) {
            lua_pushnumber(L, (lua_Number)(e[d].start + 1));
            lua_rawseti(L, -2, 1);
            lua_pushnumber(L, (lua_Number)(e[d].start + (e[d].length - 1) * e[d].step + 1));
            lua_rawseti(L, -2, 2);
            lua_pushnumber(L, (lua_Number)e[d].step);
            lua_rawseti(L, -2, 3);
        }
    }
}

/* Index tensors that are not next to each other (p[i0, :, i1]): as PyTorch and
 * NumPy, their broadcast dims come first. *t becomes the view with the indexed
 * dims first (in key order, the others after them in order), the key at kidx
 * the same selection written for it: tensors, then numbers, ranges and {} for
 * the rest. The key is then parsed again into e, tp, te, *nt; returns its n. */
static int tensors_first(lua_State *L, int kidx, wick_tensor **t, wick_key_entry *e, int n, int *tp, int *te, int *nt) {
    int nd = wick_tensor_ndim(*t), perm[WICK_MAX_DIMS], is_tensor[WICK_MAX_DIMS] = {0}, p = 0;
    for (int j = 0; j < *nt; j++) perm[p++] = tp[j], is_tensor[tp[j]] = j + 1;
    for (int d = 0; d < nd; d++)
        if (!is_tensor[d]) perm[p++] = d;
    lua_createtable(L, nd, 0);
    for (int i = 0; i < nd; i++) {
        push_entry(L, kidx, e, n, perm[i], is_tensor[perm[i]] ? te[is_tensor[perm[i]] - 1] : -1);
        lua_rawseti(L, -2, i + 1);
    }
    lua_replace(L, kidx);
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_permute(slot, *t, nd, perm));
    *t = *slot;
    return parse_key(L, kidx, *t, e, tp, te, nt);
}

/* Index tensors with only numbers between them (x[:, i, 2, j]): PyTorch takes the numbers first,
 * after which the tensors are next to each other and keep their place. *t becomes the view with
 * every number's dim taken, the key at kidx the rest of the selection, parsed again; returns its n. */
static int selects_out(lua_State *L, int kidx, wick_tensor **t, wick_key_entry *e, int n, int *tp, int *te, int *nt) {
    int nd = wick_tensor_ndim(*t), is_tensor[WICK_MAX_DIMS] = {0}, k = 0;
    const int64_t *sizes = wick_tensor_sizes(*t);
    wick_key_entry view[WICK_MAX_DIMS];
    for (int j = 0; j < *nt; j++) is_tensor[tp[j]] = j + 1;
    lua_createtable(L, nd, 0);
    for (int d = 0; d < nd; d++) {
        int number = !is_tensor[d] && d < n && e[d].select;
        view[d] = number ? e[d] : (wick_key_entry){0, 0, sizes[d], 1};
        if (number) continue;
        push_entry(L, kidx, e, n, d, is_tensor[d] ? te[is_tensor[d] - 1] : -1);
        lua_rawseti(L, -2, ++k);
    }
    lua_replace(L, kidx);
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_index_view(slot, *t, nd, view));
    *t = *slot;
    return parse_key(L, kidx, *t, e, tp, te, nt);
}

/* Whether the index tensors of a parsed key lie on dims next to each other: 1; 2 when only numbers
 * (selected dims) lie between them; 0 else. */
static int tensors_adjacent(const int *tp, int nt, const wick_key_entry *e, int n) {
    int numbers = 0;
    for (int j = 1; j < nt; j++)
        for (int d = tp[j - 1] + 1; d < tp[j]; d++) {
            if (!(d < n && e[d].select)) return 0;
            numbers = 1;
        }
    return numbers ? 2 : 1;
}
/* the key's layout settled as PyTorch's: numbers between the tensors taken first, tensors apart first */
static int settle_tensors(lua_State *L, int kidx, wick_tensor **t, wick_key_entry *e, int n, int *tp, int *te, int *nt) {
    if (*nt < 2) return n;
    int adjacent = tensors_adjacent(tp, *nt, e, n);
    if (adjacent == 2) return selects_out(L, kidx, t, e, n, tp, te, nt);
    if (!adjacent) return tensors_first(L, kidx, t, e, n, tp, te, nt);
    return n;
}

/* A tensor key: its kind, or an error. 1 mask, 2 index. */
static int tensor_key_kind(lua_State *L, wick_tensor *k) {
    wick_dtype d = wick_tensor_dtype(k);
    if (d == WICK_BOOL || d == WICK_UINT8) return 1;
    if (d == WICK_INT64 || d == WICK_INT32) return 2;
    return wl_raise(L, "index: a tensor key must be a bool mask or an int64 index tensor, got a %s tensor%s",
                    wick_dtype_name(d), wl_index_dtype_hint(d));
}

static void bad_key(lua_State *L, int idx) {
    if (lua_type(L, idx) == LUA_TSTRING) {
        const char *k = lua_tostring(L, idx);
        if (strcmp(k, "weight") == 0 || strcmp(k, "bias") == 0 || strcmp(k, "training") == 0 ||
            strcmp(k, "forward") == 0)
            wl_raise(L, "tensor has no field or method '%s' (a module's method called with '.' gets its first "
                        "argument as self: write m:forward(x), not m.forward(x))", k);
        static const struct {
            const char *field, *example;
        } named_fields[] = {
            {"eigenvalues", "local eigenvalues, eigenvectors = wick.linalg.eigh(A)"},
            {"eigenvectors", "local eigenvalues, eigenvectors = wick.linalg.eigh(A)"},
            {"L", "local L, info = wick.linalg.cholesky_ex(A)"},
            {"info", "local L, info = wick.linalg.cholesky_ex(A)"},
            {"U", "local U, S, Vh = wick.linalg.svd(A)"},
            {"S", "local U, S, Vh = wick.linalg.svd(A)"},
            {"Vh", "local U, S, Vh = wick.linalg.svd(A)"},
            {"V", "local U, S, V = wick.svd(A) (torch.svd's V)"},
            {"Q", "local Q, R = wick.linalg.qr(A)"},
            {"R", "local Q, R = wick.linalg.qr(A)"},
            {"sign", "local sign, logabsdet = wick.linalg.slogdet(A)"},
            {"logabsdet", "local sign, logabsdet = wick.linalg.slogdet(A)"},
            {"solution", "local X = wick.linalg.solve(A, B)"},
            {"LU", "local LU, pivots = wick.linalg.lu_factor(A)"},
            {"pivots", "local LU, pivots = wick.linalg.lu_factor(A)"},
            {"P", "local P, L, U = wick.linalg.lu(A)"},
            {"counts", "local output, inverse, counts = wick.unique(t, {return_inverse = true, return_counts = true})"},
            {"inverse", "local output, inverse, counts = wick.unique(t, {return_inverse = true, return_counts = true})"},
        };
        for (size_t i = 0; i < sizeof named_fields / sizeof *named_fields; i++)
            if (strcmp(k, named_fields[i].field) == 0)
                wl_raise(L, "tensor has no field or method '%s' (a function that returns PyTorch's named tuple gives "
                            "its fields as several values: %s)", k, named_fields[i].example);
        if (strcmp(k, "numpy") == 0 || strcmp(k, "__array__") == 0)
            wl_raise(L, "tensor has no field or method '%s' (Lua has no NumPy: t:tolist() gives nested tables, "
                        "t:item() one number, t:tobytes() its bytes, and a tensor has NumPy's own operations)", k);
        if (strcmp(k, "repeat_") == 0)
            wl_raise(L, "tensor has no field or method 'repeat_' (PyTorch's t.repeat(...) is t:repeat_tensor(...) "
                        "or t[\"repeat\"](t, ...): repeat is a Lua keyword)");
        if (strcmp(k, "len") == 0 || strcmp(k, "__len__") == 0)
            wl_raise(L, "tensor has no field or method '%s' (Python's len(t) is #t, or t:size(1))", k);
        wl_raise(L, "tensor has no field or method '%s'", k);
    }
    if (lua_isboolean(L, idx)) /* (TabNet's grad_input[output == 0] = 0, ported with Lua's ==) */
        wl_raise(L, "index: a key must be a number, a table of ranges, a bool mask or an int64 index tensor, got a "
                    "Lua boolean (%s): Lua's == and ~= between a tensor and a number are always false and true, so "
                    "write t:eq(x) or t:ne(x) for a mask; `not mask` is always false too (Python's ~mask is "
                    "mask:logical_not())", lua_toboolean(L, idx) ? "true" : "false");
    wl_raise(L, "index: a key must be a number, a table of ranges, a bool mask or an int64 index tensor, got %s",
             luaL_typename(L, idx));
}

/* The 1-based index tensor at idx as a 0-based one along `dim` of t (kept on the stack). */
static wick_tensor *lua_index_tensor(lua_State *L, int idx, wick_tensor *t, int dim, const char *fn) {
    wick_tensor *index = wl_checktensor(L, idx, fn, "index");
    int nd = wick_tensor_ndim(t);
    if (nd == 0) wl_raise(L, "%s: cannot index a 0-dim tensor with an index tensor", fn);
    int d = dim < 0 ? dim + nd : dim;
    if (d < 0 || d >= nd) wl_raise(L, "%s: dimension %d out of range (expected 1 to %d, or -%d to -1)", fn, dim < 0 ? dim : dim + 1, nd, nd);
    wick_dtype dt = wick_tensor_dtype(index);
    if (dt != WICK_INT64 && dt != WICK_INT32)
        wl_raise(L, "%s: expected the index to be an int64 tensor, but got %s%s", fn, wick_dtype_name(dt), wl_index_dtype_hint(dt));
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_index_from_one_based(slot, index, wick_tensor_sizes(t)[d], d));
    return *slot;
}

/* t[key] for keys other than numbers */
/* t[wick.newaxis] (Python's t[None]) is t[{wick.newaxis}], and t[wick.slice(n)] (t[:n])
 * t[{wick.slice(n)}]: the key at idx
 * replaced by a table holding it */
static void wrap_newaxis(lua_State *L, int idx) {
    if (!is_newaxis(L, idx) && !(lua_type(L, idx) == LUA_TTABLE && is_slice(L, idx))) return; /* (t[wick.slice(n)]) */
    lua_createtable(L, 1, 0);
    lua_pushvalue(L, idx);
    lua_rawseti(L, -2, 1);
    lua_replace(L, idx);
}

/* t.indices / t.values read as fields (PyTorch's named tuples: t.topk(k).indices) are
 * callable objects whose every use raises what to write; a key reads its tables raw,
 * where one would pass for {} (a whole dim): their message instead, for the key and
 * each of its entries */
static void refuse_callable(lua_State *L, int idx) {
    if (lua_type(L, idx) != LUA_TTABLE || !luaL_getmetafield(L, idx, "__call")) return;
    lua_pop(L, 1);
    luaL_callmeta(L, idx, "__tostring"); /* (raises) */
    wl_raise(L, "index: a key entry is a callable object, not a range");
}
static void refuse_callables(lua_State *L, int idx) {
    refuse_callable(L, idx);
    if (lua_type(L, idx) != LUA_TTABLE) return;
    int n = (int)lua_objlen(L, idx);
    for (int i = 1; i <= n; i++) {
        lua_rawgeti(L, idx, i);
        refuse_callable(L, lua_gettop(L));
        lua_pop(L, 1);
    }
}

WL_FUNCTION(t_index_get) {
    wick_tensor *t = wl_checktensor(L, 1, "index", "self");
    refuse_callables(L, 2);
    wrap_newaxis(L, 2);
    scalar_index(L, 2);
    wick_tensor *k = wl_totensor(L, 2);
    if (lua_type(L, 2) == LUA_TTABLE && !k) {
        wick_key_entry e[WICK_MAX_DIMS];
        int tp[WICK_MAX_DIMS], te[WICK_MAX_DIMS], nt, dim, group;
        expand_newaxis(L, 2, &t);
        drop_after_mask(L, 2);
        masks_in_key(L, 2, t);
        int n = parse_key(L, 2, t, e, tp, te, &nt);
        n = settle_tensors(L, 2, &t, e, n, tp, te, &nt);
        wick_tensor *index = nt ? key_tensors(L, 2, t, e, tp, te, nt, &dim, &group) : NULL;
        wick_tensor **slot = wl_new_slot(L);
        wl_check(L, nt ? wick_index_key(slot, t, n, e, dim, group, index) : wick_index_view(slot, t, n, e));
        return 1;
    }
    if (lua_type(L, 2) == LUA_TNUMBER) {
        wick_key_entry e = {1, 0, 1, 1};
        if (wick_tensor_ndim(t) == 0) /* (Python's torch.slogdet(W)[1]: a function's results are Lua's several values) */
            wl_raise(L, "index: cannot index a 0-dim tensor with a number (use :item(); a function that returns several "
                        "tensors gives them as several values: local sign, logabsdet = wick.slogdet(W))");
        e.start = select_index(L, 2, wick_tensor_sizes(t)[0], 0);
        wick_tensor **slot = wl_new_slot(L);
        wl_check(L, wick_index_view(slot, t, 1, &e));
        return 1;
    }
    if (!k && lua_type(L, 2) == LUA_TSTRING && lua_tostring(L, 2)[0] == '_') {
        lua_pushnil(L); /* an attribute never set whose name starts with '_' (getattr(p, "_optim", None)) */
        return 1;
    }
    if (!k) bad_key(L, 2);
    int kind = tensor_key_kind(L, k);
    if (kind == 1) {
        wick_tensor **slot = wl_new_slot(L);
        wl_check(L, wick_mask_index(slot, t, k));
        return 1;
    }
    wick_tensor *index = lua_index_tensor(L, 2, t, 0, "index");
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_index_tensor(slot, t, 0, index));
    return 1;
}

/* The value of a write at idx: a tensor, or a number (*s) with NULL. */
static wick_tensor *write_value(lua_State *L, int idx, double *s, const char *fn) {
    wick_tensor *v = wl_totensor(L, idx);
    wick_scalar sc;
    if (v) return v;
    if (wl_toscalar(L, idx, &sc)) {
        *s = sc.value;
        return NULL;
    }
    wl_raise(L, "%s: expected a number or a tensor as the value, got %s", fn, luaL_typename(L, idx));
    return NULL;
}

/* t[key] = value, every kind of key */
WL_FUNCTION(t_index_set) {
    wick_tensor *t = wl_checktensor(L, 1, "index assignment", "self");
    refuse_callables(L, 2);
    double s = 0;
    wrap_newaxis(L, 2);
    scalar_index(L, 2);
    wick_tensor *k = wl_totensor(L, 2);
    int ty = lua_type(L, 2);
    if (ty != LUA_TNUMBER && ty != LUA_TTABLE && !k) bad_key(L, 2);
    wick_tensor *v = write_value(L, 3, &s, "index assignment");
    if (ty == LUA_TNUMBER || (ty == LUA_TTABLE && !k)) {
        wick_key_entry e[WICK_MAX_DIMS];
        int n = 1;
        if (ty == LUA_TNUMBER) {
            if (wick_tensor_ndim(t) == 0) wl_raise(L, "index: cannot index a 0-dim tensor with a number (use :fill_())");
            e[0] = (wick_key_entry){1, select_index(L, 2, wick_tensor_sizes(t)[0], 0), 1, 1};
        } else {
            int tp[WICK_MAX_DIMS], te[WICK_MAX_DIMS], nt, dim, group;
            expand_newaxis(L, 2, &t);
            drop_after_mask(L, 2);
            masks_in_key(L, 2, t);
            n = parse_key(L, 2, t, e, tp, te, &nt);
            n = settle_tensors(L, 2, &t, e, n, tp, te, &nt);
            if (nt) {
                wick_tensor *index = key_tensors(L, 2, t, e, tp, te, nt, &dim, &group);
                WL_WRITE(L, wick_index_key_put_(t, n, e, dim, group, index, v, s, 0));
                return 0;
            }
        }
        WL_WRITE(L, wick_index_view_put_(t, n, e, v, s));
        return 0;
    }
    if (tensor_key_kind(L, k) == 1) {
        WL_WRITE(L, wick_mask_index_put_(t, k, v, s));
        return 0;
    }
    wick_tensor *index = lua_index_tensor(L, 2, t, 0, "index");
    WL_WRITE(L, wick_index_tensor_put_(t, 0, index, v, s, 0));
    return 0;
}

/* ---- the masked ops ---- */

/* the mask of masked_fill, masked_select, masked_scatter: bool, as PyTorch 2 requires (a
 * uint8 mask of older code, transformer-xl's .byte(), is refused there too) */
static wick_tensor *mask_arg(lua_State *L, int idx, const char *fn) {
    wick_tensor *m = wl_checktensor(L, idx, fn, "mask");
    if (wick_tensor_dtype(m) == WICK_UINT8)
        wl_raise(L, "%s: only supports boolean masks, but got mask with dtype uint8 (make it with :bool())", fn);
    return m;
}

/* value: a number or a 0-dim tensor */
static wick_tensor *fill_value(lua_State *L, int idx, double *s, const char *fn) {
    wick_tensor *v = wl_totensor(L, idx);
    wick_scalar sc;
    if (v) return v;
    if (!wl_toscalar(L, idx, &sc)) wl_raise(L, "%s: expected a number or a 0-dim tensor as the value, got %s", fn, luaL_typename(L, idx));
    *s = sc.value;
    return NULL;
}

WL_FUNCTION(t_masked_fill) {
    wl_no_more(L, 3, "masked_fill");
    wick_tensor *t = wl_checktensor(L, 1, "masked_fill", "self"), *m = mask_arg(L, 2, "masked_fill");
    double s = 0;
    wick_tensor *v = fill_value(L, 3, &s, "masked_fill");
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_masked_fill(slot, t, m, v, s));
    return 1;
}

WL_FUNCTION(t_masked_fill_) {
    wl_no_more(L, 3, "masked_fill_");
    wick_tensor *t = wl_checktensor(L, 1, "masked_fill_", "self"), *m = mask_arg(L, 2, "masked_fill_");
    double s = 0;
    wick_tensor *v = fill_value(L, 3, &s, "masked_fill_");
    WL_WRITE(L, wick_masked_fill_(t, m, v, s));
    lua_settop(L, 1);
    return 1;
}

WL_FUNCTION(t_masked_select) {
    wl_no_more(L, 2, "masked_select");
    wick_tensor *t = wl_checktensor(L, 1, "masked_select", "self"), *m = mask_arg(L, 2, "masked_select");
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_masked_select(slot, t, m));
    return 1;
}

/* masked_scatter_ (upvalue 1: 1) and masked_scatter (a copy) */
WL_FUNCTION(t_masked_scatter) {
    int inplace = (int)lua_tointeger(L, lua_upvalueindex(1));
    const char *fn = inplace ? "masked_scatter_" : "masked_scatter";
    wl_no_more(L, 3, fn);
    wick_tensor *t = wl_checktensor(L, 1, fn, "self"), *m = mask_arg(L, 2, fn);
    wick_tensor *src = wl_checktensor(L, 3, fn, "source");
    if (inplace) {
        WL_WRITE(L, wick_masked_scatter_(t, m, src));
        lua_settop(L, 1);
        return 1;
    }
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_masked_scatter(slot, t, m, src));
    return 1;
}

/* index_fill(_)(dim, index, value), index_copy(_)(dim, index, source): upvalue 1
 * in place, upvalue 2 copy (1) or fill (0) */
WL_FUNCTION(t_index_write) {
    int inplace = (int)lua_tointeger(L, lua_upvalueindex(1)), copy = (int)lua_tointeger(L, lua_upvalueindex(2));
    const char *fn = copy ? (inplace ? "index_copy_" : "index_copy") : (inplace ? "index_fill_" : "index_fill");
    wick_tensor *t = wl_checktensor(L, 1, fn, "self");
    wl_no_more(L, 4, fn);
    int dim = wl_dim(L, 2, fn);
    wick_tensor *index = lua_index_tensor(L, 3, t, dim, fn);
    double s = 0;
    wick_tensor *v = copy ? wl_checktensor(L, 4, fn, "source") : fill_value(L, 4, &s, fn);
    wick_tensor *target = t;
    if (!inplace) {
        wick_tensor **slot = wl_new_slot(L);
        wl_check(L, wick_clone(slot, t));
        target = *slot;
    }
    WL_WRITE(L, copy ? wick_index_copy_(target, dim, index, v) : wick_index_fill_(target, dim, index, v, s));
    if (inplace) lua_settop(L, 1);
    return 1;
}

/* index_put(_)(indices, values[, accumulate]): indices a table of int64
 * index tensors for the first dims (broadcast together), or of one bool mask */
WL_FUNCTION(t_index_put) {
    int inplace = (int)lua_tointeger(L, lua_upvalueindex(1));
    const char *fn = inplace ? "index_put_" : "index_put";
    wick_tensor *t = wl_checktensor(L, 1, fn, "self");
    if (lua_istable(L, 2) && !wl_totensor(L, 2) && lua_objlen(L, 2) == 0) { /* PyTorch's keywords: {indices =, values =, accumulate =} */
        static const char *const keys[] = {"indices", "values", "accumulate", NULL};
        if (!lua_isnoneornil(L, 3)) wl_raise(L, "%s: got the arguments both by name and by position", fn);
        wl_check_keys(L, 2, fn, keys);
        lua_settop(L, 2);
        lua_getfield(L, 2, "values");
        lua_getfield(L, 2, "accumulate");
        lua_getfield(L, 2, "indices");
        lua_replace(L, 2);
    }
    if (!lua_istable(L, 2) || wl_totensor(L, 2))
        wl_raise(L, "%s: expected a table of index tensors as argument 'indices', got %s", fn, luaL_typename(L, 2));
    int nt = (int)lua_objlen(L, 2);
    if (nt < 1 || nt > wick_tensor_ndim(t))
        wl_raise(L, "%s: expected 1 to %d index tensors (the tensor's dimensions), got %d", fn, wick_tensor_ndim(t), nt);
    double s = 0;
    wick_tensor *v = write_value(L, 3, &s, fn);
    if (v && wick_tensor_dtype(v) != wick_tensor_dtype(t)) /* (t[key] = v casts; the explicit op does not, as PyTorch's) */
        wl_raise(L, "%s: Index put requires the source and destination dtypes match, got %s for the destination and %s "
                    "for the source",
                 fn, wick_dtype_name(wick_tensor_dtype(t)), wick_dtype_name(wick_tensor_dtype(v)));
    int accumulate = 0;
    if (lua_istable(L, 4) && !wl_totensor(L, 4)) { /* PyTorch's keyword: {accumulate = true} */
        static const char *const keys[] = {"accumulate", NULL};
        wl_check_keys(L, 4, fn, keys);
        lua_getfield(L, 4, "accumulate");
        lua_replace(L, 4);
    }
    if (!lua_isnoneornil(L, 4)) {
        if (lua_type(L, 4) != LUA_TBOOLEAN) wl_raise(L, "%s: expected a boolean for argument 'accumulate', got %s", fn, luaL_typename(L, 4));
        accumulate = lua_toboolean(L, 4);
    }
    lua_settop(L, 4);
    wick_tensor *target = t;
    if (!inplace) {
        wick_tensor **slot = wl_new_slot(L);
        wl_check(L, wick_clone(slot, t));
        target = *slot;
    }
    int result = lua_gettop(L);
    lua_rawgeti(L, 2, 1);
    wick_tensor *first = wl_checktensor(L, -1, fn, "indices[1]");
    int mask = tensor_key_kind(L, first) == 1;
    if (mask && nt > 1) wl_raise(L, "%s: a bool mask goes alone in 'indices'", fn);
    if (mask && accumulate) { /* PyTorch's index_put_((mask,), v, accumulate=True): the mask's coordinates */
        int k = wick_tensor_ndim(first);
        for (int d = 0; d < k; d++)
            if (d >= wick_tensor_ndim(target) || wick_tensor_sizes(first)[d] != wick_tensor_sizes(target)[d])
                wl_raise(L, "%s: the shape of the mask does not match the shape of the indexed tensor at dimension %d "
                            "(the mask has %d dims, size %lld there)",
                         fn, d + 1, k, (long long)wick_tensor_sizes(first)[d]);
        lua_getfield(L, -1, "nonzero");
        lua_pushvalue(L, -2);
        lua_createtable(L, 0, 1);
        lua_pushboolean(L, 1);
        lua_setfield(L, -2, "as_tuple");
        lua_call(L, 2, 1);
        lua_replace(L, 2);
        nt = (int)lua_objlen(L, 2);
        mask = 0;
    }
    if (mask) {
        WL_WRITE(L, wick_mask_index_put_(target, first, v, s));
    } else {
        const int64_t *sizes = wick_tensor_sizes(target);
        wick_tensor *conv[WICK_MAX_DIMS];
        for (int j = 0; j < nt; j++) {
            lua_rawgeti(L, 2, j + 1);
            char what[32];
            snprintf(what, sizeof what, "indices[%d]", j + 1);
            wick_tensor *k = wl_checktensor(L, -1, fn, what);
            if (tensor_key_kind(L, k) != 2) wl_raise(L, "%s: %s must be an int64 index tensor, got bool", fn, what);
            wick_tensor **slot = wl_new_slot(L);
            wl_check(L, wick_index_from_one_based(slot, k, sizes[j], j));
            conv[j] = *slot;
        }
        wick_tensor *index = conv[0];
        if (nt > 1) {
            wick_tensor **slot = wl_new_slot(L);
            wl_check(L, wick_index_linear(slot, nt, (const wick_tensor *const *)conv, sizes));
            index = *slot;
        }
        WL_WRITE(L, wick_index_key_put_(target, 0, NULL, 0, nt, index, v, s, accumulate));
    }
    lua_settop(L, inplace ? 1 : result);
    return 1;
}

static void closure(lua_State *L, const char *name, lua_CFunction f, int up1, int up2) {
    lua_pushinteger(L, up1);
    lua_pushinteger(L, up2);
    lua_pushcclosure(L, f, 2);
    lua_setfield(L, -2, name);
}

void wl_open_index(lua_State *L) {
    static const struct {
        const char *name;
        lua_CFunction f;
        int up1, up2;
    } fns[] = {
        {"_index_get", t_index_get, 0, 0},        {"_index_set", t_index_set, 0, 0},
        {"masked_fill", t_masked_fill, 0, 0},     {"masked_fill_", t_masked_fill_, 0, 0},
        {"masked_select", t_masked_select, 0, 0}, {"masked_scatter_", t_masked_scatter, 1, 0},
        {"masked_scatter", t_masked_scatter, 0, 0}, {"index_fill_", t_index_write, 1, 0},
        {"index_fill", t_index_write, 0, 0},      {"index_copy_", t_index_write, 1, 1},
        {"index_copy", t_index_write, 0, 1},      {"index_put_", t_index_put, 1, 0},
        {"index_put", t_index_put, 0, 0},
    };
    lua_pushlightuserdata(L, &newaxis_tag);
    lua_setfield(L, -2, "newaxis");
    luaL_newmetatable(L, SLICE);
    lua_pushcfunction(L, slice_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pushstring(L, "slice");
    lua_setfield(L, -2, "__name");
    lua_pop(L, 1);
    lua_pushcfunction(L, m_slice);
    lua_setfield(L, -2, "slice");
    lua_getfield(L, -1, "Tensor"); /* wick.<name> mirrors of these are in lua/wick/init.lua */
    for (size_t i = 0; i < sizeof fns / sizeof *fns; i++) closure(L, fns[i].name, fns[i].f, fns[i].up1, fns[i].up2);
    lua_pop(L, 1);
}
