/* Devices: parsing, formatting, and which backend runs them. */
#include "internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>

#define DEVICE_FORMS "accepted forms: 'cpu', 'cuda', 'cuda:N' (N >= 0), 'meta'"

wick_device wick_cpu(void) { return (wick_device){WICK_CPU, -1}; }

int wick_device_equal(wick_device a, wick_device b) { return a.type == b.type && a.index == b.index; }

wick_status wick_device_parse(const char *text, wick_device *out) {
    static const struct {
        const char *name;
        wick_device_type type;
    } types[] = {{"cpu", WICK_CPU}, {"cuda", WICK_CUDA}, {"meta", WICK_META}};
    for (size_t i = 0; i < sizeof types / sizeof *types; i++) {
        size_t n = strlen(types[i].name);
        if (strncmp(text, types[i].name, n) != 0) continue;
        if (text[n] == '\0') return *out = (wick_device){types[i].type, -1}, WICK_OK;
        if (text[n] != ':') break;
        const char *digits = text + n + 1;
        if (!isdigit((unsigned char)digits[0])) break;
        char *end;
        long index = strtol(digits, &end, 10);
        if (*end != '\0' || index > 1 << 20) break;
        return *out = (wick_device){types[i].type, (int)index}, WICK_OK;
    }
    if (wk_missing_dtype(text)) /* t:to("int8"): a dtype, just not one of wick's */
        return wick_fail(WICK_ERR_DTYPE, "'%s' is one of PyTorch's dtypes that wick does not have (int32 holds int8 "
                                         "and int16 values); as a device string: " DEVICE_FORMS, text);
    return wick_fail(WICK_ERR_DEVICE, "invalid device string '%s' (" DEVICE_FORMS ")", text);
}

const char *wick_device_format(wick_device dev, char *buf, size_t size) {
    const char *name = dev.type == WICK_CPU ? "cpu" : dev.type == WICK_CUDA ? "cuda" : "meta";
    if (dev.index >= 0) snprintf(buf, size, "%s:%d", name, dev.index);
    else snprintf(buf, size, "%s", name);
    return buf;
}

int wick_tensor_is_pinned(const wick_tensor *t) { return t->storage->pinned; }

/* The public wick_cuda_* functions are in cuda_api.c. */

wick_status wk_check_device_usable(wick_device dev) {
    if (dev.type != WICK_CUDA) return WICK_OK;
#ifndef WICK_WITH_CUDA
    char name[32];
    return wick_fail(WICK_ERR_DEVICE,
                     "cannot use device '%s': wick was built without CUDA, so "
                     "wick.cuda.is_available() is false; use 'cpu' (or 'meta' to check shapes "
                     "and devices without data)",
                     wick_device_format(dev, name, sizeof name));
#else
    int count = wick_cuda_device_count();
    char name[32];
    if (count == 0)
        return wick_fail(WICK_ERR_DEVICE,
                         "cannot use device '%s': no CUDA GPU is available "
                         "(wick.cuda.is_available() is false)",
                         wick_device_format(dev, name, sizeof name));
    if (dev.index >= count)
        return wick_fail(WICK_ERR_DEVICE, "invalid device 'cuda:%d': wick.cuda.device_count() is %d",
                         dev.index, count);
    return WICK_OK;
#endif
}

const wick_backend *wk_backend_for(wick_device dev) {
    if (dev.type == WICK_CPU) return &wk_cpu_backend;
#ifdef WICK_WITH_CUDA
    if (dev.type == WICK_CUDA) return &wk_cuda_backend;
#endif
    return NULL; /* meta: shapes only */
}
