/* Custom functions: autograd nodes whose backward belongs to the host (the Lua
 * binding's wick.autograd.Function, PyTorch's torch.autograd.Function).
 *
 * The host runs its forward without grad, then wick_function_record makes the
 * output's node, with edges to the inputs. When a backward reaches the node,
 * function_backward calls the hook the backward was started with
 * (wick_backward_ex) with kind WICK_HOOK_FUNCTION and the node's id; the host
 * keeps its state (its backward, the saved tensors) by that id and learns
 * which ids no node uses any more from wick_function_released. */
#include "autograd.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* the running backward's hook (run_backward sets it on its thread) */
_Thread_local wick_autograd_hook wk_backward_hook;
_Thread_local void *wk_backward_hook_ud;

static int64_t function_ids; /* the last id given (atomic) */

/* ---- names: a node's name lives as long as the process (interned, bounded) ---- */

#define MAX_NAMES 4096
static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;
static char *names[MAX_NAMES];
static int n_names;

static const char *intern_name(const char *name) {
    const char *r = "FunctionBackward";
    pthread_mutex_lock(&names_lock);
    for (int i = 0; i < n_names; i++)
        if (strcmp(names[i], name) == 0) {
            r = names[i];
            goto out;
        }
    if (n_names < MAX_NAMES) {
        size_t len = strlen(name);
        char *copy = malloc(len + 1);
        if (copy) {
            memcpy(copy, name, len + 1);
            r = names[n_names++] = copy;
        }
    }
out:
    pthread_mutex_unlock(&names_lock);
    return r;
}

/* ---- ids whose node is gone (any thread frees nodes; the host drains them) ---- */

static wk_id_queue released = WK_ID_QUEUE_INIT;

void wk_function_forget(const wk_node *n) { wk_id_queue_push(&released, n->sizes[0]); }

int wick_function_released(int64_t *ids, int max) { return wk_id_queue_take(&released, ids, max); }

/* ---- the node ---- */

/* grad's shape is input's broadcast up (PyTorch's is_expandable_to) */
static bool expandable(const wk_edge *e, const wick_tensor *g) {
    if (g->ndim < e->ndim) return false;
    for (int i = 1; i <= e->ndim; i++) {
        int64_t want = e->sizes[e->ndim - i], got = g->sizes[g->ndim - i];
        if (want != got && want != 1) return false;
    }
    return true;
}

wick_status wk_function_backward(wk_node *n, wick_tensor *grad, wick_tensor **grads) {
    if (!wk_backward_hook)
        return wick_fail(WICK_ERR_UNSUPPORTED,
                         "%s: a custom function's backward runs in its host (the Lua binding's "
                         "autograd.Function); this backward was started without the host's hook",
                         n->name);
    wick_tensor **io = calloc((size_t)n->n_inputs + 1, sizeof *io);
    if (!io) return wick_fail(WICK_ERR_OOM, "out of memory in backward");
    io[0] = grad;
    wick_status st = wk_backward_hook(wk_backward_hook_ud, WICK_HOOK_FUNCTION, NULL, n->sizes[0], io);
    for (int i = 0; i < n->n_inputs; i++) {
        const wk_edge *e = &n->edges[i];
        wick_tensor *g = io[i + 1];
        if (!st && g && (e->node || e->leaf) && !expandable(e, g)) {
            char a[WK_SHAPE_BUF], b[WK_SHAPE_BUF];
            st = wick_fail(WICK_ERR_SHAPE, "%s returned an invalid gradient at index %d: got %s but expected shape "
                                           "compatible with %s",
                           n->name, i + 1, wk_shape_str(g->ndim, g->sizes, a, sizeof a),
                           wk_shape_str(e->ndim, e->sizes, b, sizeof b));
        }
        if (st) wick_tensor_release(g);
        else grads[i] = g;
    }
    free(io);
    return st;
}

wick_status wick_function_record(wick_tensor *out, const char *name, int n, wick_tensor *const *inputs,
                                 int64_t *id) {
    if (!out || !name || n < 0 || (n > 0 && !inputs) || !id)
        return wick_fail(WICK_ERR_ARGUMENT, "wick_function_record: NULL argument");
    if (out->grad_fn || out->requires_grad)
        return wick_fail(WICK_ERR_ARGUMENT, "%s: the output is already part of a graph (compute it without grad, or "
                                            "record a detached alias of it)",
                         name);
    if (!wick_dtype_is_floating(out->dtype) && !wick_dtype_is_complex(out->dtype))
        return wick_fail(WICK_ERR_ARGUMENT, "%s: an output of dtype %s cannot require grad", name,
                         wick_dtype_name(out->dtype));
    wk_node *node = NULL;
    wick_status st = wk_record(out, intern_name(name), wk_function_backward, 0, n,
                               (const wick_tensor *const *)inputs, &node);
    if (st) return st;
    node->twice = true; /* the host's backward runs its ops under create_graph's grad mode */
    *id = node->sizes[0] = __atomic_add_fetch(&function_ids, 1, __ATOMIC_RELAXED);
    return WICK_OK;
}
