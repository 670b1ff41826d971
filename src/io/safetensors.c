/* Flat checkpoints from C: a table of named tensors as a plain safetensors file
 * (docs/checkpoint-format.md), the C API's use of the checkpoint engine
 * (ckpt.h): wick_save_flat writes through wk_ckpt_write as wick.save_safetensors
 * does, wick_load_flat reads through wk_ckpt_read (the container only). */
#include "ckpt.h"
#include "json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *name_problem(const char *name) {
    const unsigned char *p = (const unsigned char *)name;
    size_t n = strlen(name);
    if (strcmp(name, "__metadata__") == 0) return "is reserved by safetensors";
    for (size_t i = 0; i < n;) {
        if (p[i] < 0x20 || p[i] == 0x7F) return "contains a control character";
        size_t len = wk_utf8_seq(p + i, n - i);
        if (!len) return "is not valid UTF-8";
        i += len;
    }
    return NULL;
}

/* A CPU tensor holding exactly t's elements in a storage of its own. */
static wick_status host_copy(wick_tensor **out, wick_tensor *t) {
    wick_tensor *d = NULL, *h = NULL;
    wick_status st = wick_detach(&d, t);
    if (st) return st;
    wick_options o = wick_default_options();
    o.dtype = wick_tensor_dtype(t);
    o.device = wick_cpu();
    st = wick_to(&h, d, o);
    wick_tensor_release(d);
    if (st) return st;
    if (!wick_tensor_is_contiguous(h) || wick_tensor_offset(h) != 0 || wick_storage_numel(h) != wick_tensor_numel(h)) {
        wick_tensor *c = NULL;
        st = wick_clone(&c, h);
        wick_tensor_release(h);
        if (st) return st;
        h = c;
    }
    *out = h;
    return WICK_OK;
}

static int by_string(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

wick_status wick_save_flat(const char *path, int n, const char *const *names, const wick_tensor *const *tensors) {
    if (!path) return wick_fail(WICK_ERR_ARGUMENT, "wick_save_flat: expected a file path");
    if (n < 0 || (n > 0 && (!names || !tensors)))
        return wick_fail(WICK_ERR_ARGUMENT, "wick_save_flat: %s: bad count or arrays", path);
    for (int i = 0; i < n; i++) {
        if (!names[i] || !tensors[i])
            return wick_fail(WICK_ERR_ARGUMENT, "wick_save_flat: %s: entry %d has no name or no tensor", path, i + 1);
        const char *why = name_problem(names[i]);
        if (why) return wick_fail(WICK_ERR_ARGUMENT, "wick_save_flat: %s: the name of entry %d %s", path, i + 1, why);
    }
    if (n > 1) { /* unique names: checked on a sorted copy */
        const char **sorted = malloc((size_t)n * sizeof *sorted);
        if (!sorted) return wick_fail(WICK_ERR_OOM, "wick_save_flat: out of memory writing %s", path);
        memcpy(sorted, names, (size_t)n * sizeof *sorted);
        qsort(sorted, (size_t)n, sizeof *sorted, by_string);
        const char *dup = NULL;
        for (int i = 1; i < n && !dup; i++)
            if (strcmp(sorted[i], sorted[i - 1]) == 0) dup = sorted[i];
        free(sorted);
        if (dup) return wick_fail(WICK_ERR_ARGUMENT, "wick_save_flat: %s: duplicate name '%s'", path, dup);
    }
    wk_ckpt *c = wk_ckpt_new(WK_CKPT_SAFETENSORS);
    int oom = !c || !(c->root = wk_ckpt_table(c));
    wick_status st = WICK_OK;
    for (int i = 0; i < n && !st && !oom; i++) {
        wick_tensor *h = NULL;
        st = host_copy(&h, (wick_tensor *)tensors[i]);
        if (st) {
            char msg[512];
            snprintf(msg, sizeof msg, "%s", wick_last_error());
            st = wick_fail(st, "wick_save_flat: %s: entry '%s': %s", path, names[i], msg);
            break;
        }
        int k = wk_ckpt_add_storage(c, names[i], "cpu", wick_tensor_dtype(h), wick_tensor_numel(h));
        if (k >= 0) c->storages[k].data = h;
        else wick_tensor_release(h);
        wk_ckpt_value *key = wk_ckpt_string(c, names[i], strlen(names[i]));
        wk_ckpt_value *v = k < 0 ? NULL
                                 : wk_ckpt_tensor(c, k, wick_tensor_dtype(h), wick_tensor_ndim(h), wick_tensor_sizes(h),
                                                  wick_tensor_strides(h), 0);
        if (!key || !v || wk_ckpt_table_add(c, c->root, key, v)) oom = 1;
    }
    if (oom) st = wick_fail(WICK_ERR_OOM, "wick_save_flat: out of memory writing %s", path);
    if (!st) st = wk_ckpt_write(path, c, "wick_save_flat", 0);
    wk_ckpt_free(c);
    return st;
}

void wick_free_flat(int n, char **names, wick_tensor **tensors) {
    for (int i = 0; i < n; i++) {
        if (names) free(names[i]);
        if (tensors) wick_tensor_release(tensors[i]);
    }
    free(names);
    free(tensors);
}

wick_status wick_load_flat(const char *path, int *n, char ***names, wick_tensor ***tensors) {
    if (!path || !n || !names || !tensors) return wick_fail(WICK_ERR_ARGUMENT, "wick_load_flat: NULL argument");
    *n = 0, *names = NULL, *tensors = NULL;
    wk_ckpt *c = NULL;
    wk_ckpt_read_options o = {"wick_load_flat", 0, 1};
    wick_status st = wk_ckpt_read(&c, path, &o);
    if (st) return st;
    int count = c->root->as.table.n;
    char **ns = calloc(count > 0 ? (size_t)count : 1, sizeof *ns);
    wick_tensor **ts = calloc(count > 0 ? (size_t)count : 1, sizeof *ts);
    if (!ns || !ts) {
        free(ns);
        free(ts);
        wk_ckpt_free(c);
        return wick_fail(WICK_ERR_OOM, "wick_load_flat: out of memory reading %s", path);
    }
    for (int i = 0; i < count; i++) {
        const wk_ckpt_pair *p = &c->root->as.table.pairs[i];
        ns[i] = strdup(p->key->as.string.bytes);
        ts[i] = p->value->as.tensor.view;
        wick_tensor_retain(ts[i]); /* the checkpoint's reference goes with it */
        if (!ns[i]) st = WICK_ERR_OOM;
    }
    wk_ckpt_free(c);
    if (st) {
        wick_free_flat(count, ns, ts);
        return wick_fail(WICK_ERR_OOM, "wick_load_flat: out of memory reading %s", path);
    }
    *n = count, *names = ns, *tensors = ts;
    return WICK_OK;
}
