/* The autograd engine: nodes recorded by ops, and the backward walk.
 *
 * Every differentiable op, when grad mode is on and an input requires grad,
 * records a node on its output (t->grad_fn) with one edge per input: to the node
 * that produced it, or to the leaf whose .grad accumulates. wick_backward orders
 * the reachable nodes topologically (an iterative depth-first walk, so deep
 * graphs cannot overflow the C stack), sorts them by creation (the latest
 * first, PyTorch's order), then runs each node's backward function once, with
 * the sum of the gradients that reached it. Without retain_graph the
 * saved tensors are freed as each node finishes. */
#include "autograd.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

_Thread_local int wk_grad_mode = 1;

void wick_set_grad_enabled(int enabled) { wk_grad_mode = enabled != 0; }
int wick_is_grad_enabled(void) { return wk_grad_mode; }

int wick_requires_grad(const wick_tensor *t) { return (void)wk_refresh_view(t), t->requires_grad; }
int wick_is_leaf(const wick_tensor *t) { return (void)wk_refresh_view(t), t->grad_fn == NULL; }
wick_tensor *wick_grad(const wick_tensor *t) { return t->grad; }
const char *wick_grad_fn_name(const wick_tensor *t) {
    (void)wk_refresh_view(t);
    return t->grad_fn ? t->grad_fn->name : NULL;
}

wick_status wick_set_requires_grad(wick_tensor *t, int requires_grad) {
    if (t->grad_fn && !requires_grad)
        return wick_fail(WICK_ERR_ARGUMENT,
                         "you can only change requires_grad flags of leaf tensors; use :detach() to get a "
                         "tensor that does not require grad");
    if (requires_grad && !wick_dtype_is_floating(t->dtype) && !wick_dtype_is_complex(t->dtype))
        return wick_fail(WICK_ERR_DTYPE, "only tensors of floating point and complex dtype can require gradients (got %s)",
                         wick_dtype_name(t->dtype));
    t->requires_grad = requires_grad != 0;
    if (t->requires_grad && !t->grad_fn) t->learnt = true;
    return WICK_OK;
}

int wick_is_parameter(const wick_tensor *t) { return t->learnt && !t->grad_fn; }

wick_status wick_set_grad(wick_tensor *t, wick_tensor *grad) {
    if (grad == t) /* it would hold itself: a reference cycle that is never freed */
        return wick_fail(WICK_ERR_ARGUMENT, "can't assign a tensor as its own grad");
    if (grad) {
        char a[WK_SHAPE_BUF], b[WK_SHAPE_BUF];
        if (grad->ndim != t->ndim || memcmp(grad->sizes, t->sizes, sizeof(int64_t) * t->ndim) != 0)
            return wick_fail(WICK_ERR_SHAPE, "assigned grad has shape %s, but the tensor has shape %s",
                             wk_shape_str(grad->ndim, grad->sizes, a, sizeof a), wk_shape_str(t->ndim, t->sizes, b, sizeof b));
        if (!wick_device_equal(grad->storage->device, t->storage->device) || grad->dtype != t->dtype) {
            char da[32], db[32];
            return wick_fail(WICK_ERR_DEVICE, "assigned grad is %s on %s, but the tensor is %s on %s",
                             wick_dtype_name(grad->dtype), wick_device_format(grad->storage->device, da, sizeof da),
                             wick_dtype_name(t->dtype), wick_device_format(t->storage->device, db, sizeof db));
        }
        wick_tensor_retain(grad);
    }
    wick_tensor_release(t->grad);
    t->grad = grad;
    return WICK_OK;
}

wick_status wick_detach(wick_tensor **out, wick_tensor *t) {
    wick_status st = wk_tensor_view(out, t, t->ndim, t->sizes, t->strides, t->offset); /* no grad_fn, no requires_grad */
    if (st) return st;
    (*out)->detached_alias = true;
    __atomic_add_fetch(&(*out)->storage->aliases, 1, __ATOMIC_RELAXED);
    return WICK_OK;
}

wick_status wick_data(wick_tensor **out, wick_tensor *t) {
    wick_status st = wick_detach(out, t);
    if (!st) (*out)->data_alias = true;
    return st;
}

wick_status wick_detach_(wick_tensor *t) {
    if (t->view_base)
        return wick_fail(WICK_ERR_ARGUMENT, "detach_: Can't detach views in-place. Use detach() instead (t = "
                                            "t:detach(), as PyTorch's)");
    if (t->grad_fn) wk_node_release(t->grad_fn);
    t->grad_fn = NULL;
    t->requires_grad = 0;
    return WICK_OK;
}

/* ---- nodes ---- */

bool wk_wants_grad(int n, const wick_tensor *const *inputs) {
    if (!wk_grad_mode) return false;
    for (int i = 0; i < n; i++) {
        if (!inputs[i]) continue;
        if (inputs[i]->view_base) (void)wk_refresh_view(inputs[i]); /* out of memory: wk_record tries again, and reports it */
        if (inputs[i]->requires_grad) return true;
    }
    return false;
}

/* Frees a node's saved tensors; returns whether it had any (a node that saved
 * none, as expand or add, can run again, as in PyTorch: a Normal(loc, 1)
 * built once and used in two steps backs through its expand twice). */
static void frame_release(struct wk_frame *f);
static bool release_saved(wk_node *n) {
    bool had = false;
    for (int i = 0; i < WK_MAX_SAVED; i++) {
        had |= n->saved[i] != NULL || n->frame_slot[i] != 0;
        wick_tensor_release(n->saved[i]);
        n->saved[i] = NULL;
        n->frame_slot[i] = 0;
    }
    frame_release(n->frame);
    n->frame = NULL;
    return had;
}

/* ---- ids the host keeps state for ---- */

void wk_id_queue_push(wk_id_queue *q, int64_t id) {
    pthread_mutex_lock(&q->lock);
    if (q->n == q->cap) {
        size_t cap = q->cap ? q->cap * 2 : 64;
        int64_t *p = realloc(q->ids, cap * sizeof *p);
        if (p) q->ids = p, q->cap = cap;
    }
    if (q->n < q->cap) q->ids[q->n++] = id;
    pthread_mutex_unlock(&q->lock);
}

int wk_id_queue_take(wk_id_queue *q, int64_t *ids, int max) {
    pthread_mutex_lock(&q->lock);
    int n = 0;
    while (n < max && q->n > 0) ids[n++] = q->ids[--q->n];
    pthread_mutex_unlock(&q->lock);
    return n;
}

/* Hook ids whose tensor and node are gone: the host drops their hooks. The
 * last holder queues it: a node with the id, or a tensor whose node does not
 * have it (a leaf). */
static wk_id_queue hooks_released = WK_ID_QUEUE_INIT;
static int64_t hook_ids; /* the last id given (atomic): hooks, retained grads, checkpoints */

void wk_hook_forget(const wick_tensor *t) {
    int64_t id = __atomic_load_n(&t->hook_id, __ATOMIC_RELAXED);
    if (id && !(t->grad_fn && t->grad_fn->hook_id == id)) wk_id_queue_push(&hooks_released, id);
}

int wick_hooks_released(int64_t *ids, int max) { return wk_id_queue_take(&hooks_released, ids, max); }

void wk_node_release(wk_node *n) {
    /* iterative, so a long chain of nodes cannot overflow the C stack */
    while (n && __atomic_sub_fetch(&n->refcount, 1, __ATOMIC_ACQ_REL) == 0) {
        wk_node *next = NULL;
        if (n->backward == wk_function_backward) wk_function_forget(n);
        if (n->hook_id) wk_id_queue_push(&hooks_released, n->hook_id);
        if (n->retain_id) wk_id_queue_push(&hooks_released, n->retain_id);
        release_saved(n);
        wick_tensor_release(n->grad);
        for (int i = 0; i < n->n_inputs; i++) {
            wick_tensor_release(n->edges[i].leaf);
            if (!n->edges[i].node) continue;
            if (!next) next = n->edges[i].node; /* released below without recursion */
            else wk_node_release(n->edges[i].node);
        }
        free(n->edges);
        free(n);
        n = next;
    }
}

static uint64_t node_seq; /* the last node's creation number (atomic: Lua states on several threads) */

/* An in-place op gave a tensor a new history: its retained grad follows it
 * (PyTorch moves retains_grad hooks to the new grad_fn; other hooks stay). */
static void move_retain(wk_node *from, wk_node *to) {
    if (!from || !to || !from->retain_id || from == to) return;
    to->retain_id = from->retain_id;
    from->retain_id = 0;
}

wick_status wk_record(wick_tensor *out, const char *name, wk_backward_fn fn, int op, int n,
                      const wick_tensor *const *inputs, wk_node **node_out) {
    for (int i = 0; i < n; i++) {
        wick_status st = inputs[i] ? wk_refresh_view(inputs[i]) : WICK_OK;
        if (st) return st;
    }
    wk_node *node = calloc(1, sizeof *node);
    wk_edge *edges = calloc((size_t)(n ? n : 1), sizeof *edges);
    if (!node || !edges) {
        free(node);
        free(edges);
        return wick_fail(WICK_ERR_OOM, "out of memory recording the autograd graph");
    }
    node->refcount = 1;
    node->seq = __atomic_add_fetch(&node_seq, 1, __ATOMIC_RELAXED);
    node->name = name;
    node->backward = fn;
    node->op = op;
    node->n_inputs = n;
    node->edges = edges;
    for (int i = 0; i < n; i++) {
        const wick_tensor *t = inputs[i];
        if (!t || !t->requires_grad) continue;
        wk_edge *e = &edges[i];
        e->dtype = t->dtype;
        e->device = t->storage->device;
        e->ndim = t->ndim;
        memcpy(e->sizes, t->sizes, sizeof(int64_t) * t->ndim);
        if (t->grad_fn) {
            e->node = t->grad_fn;
            __atomic_add_fetch(&e->node->refcount, 1, __ATOMIC_RELAXED);
        } else {
            e->leaf = (wick_tensor *)t;
            wick_tensor_retain(e->leaf);
        }
    }
    move_retain(out->grad_fn, node);
    wk_node_release(out->grad_fn);
    out->grad_fn = node;
    out->requires_grad = true;
    out->nograd_view = false; /* (an op's output, whatever view the op built it as) */
    if (node_out) *node_out = node;
    return WICK_OK;
}

wick_status wk_publish(wick_tensor **out, wick_tensor *r, wick_status record_status) {
    if (record_status) {
        wick_tensor_release(r);
        return record_status;
    }
    *out = r;
    return WICK_OK;
}

/* ---- checkpoints without reentry (wick_checkpoint_begin) ----
 *
 * A frame is one checkpointed call. While it packs (the innermost context of
 * this thread), wk_save keeps no tensor: the node remembers the frame and the
 * save's number. While it collects (its function run again from the engine,
 * through the host's WICK_HOOK_RECOMPUTE), saves happen as usual and each is
 * noted; at the end the noted tensors, as the nodes then hold them (an
 * in-place op may have cloned one), are the frame's, and the first nodes'
 * slots read them when the backward reaches them. */
typedef struct wk_frame {
    int refcount; /* atomic: the packing context and each node that has slots */
    int64_t id;
    int saves;    /* saves packed */
    bool collecting, recomputed;
    int count, cap;         /* noted saves: count of cap */
    wk_node **nodes;        /* while collecting: node and slot of each save */
    int *slots;
    wick_tensor **tensors;  /* after: the saved tensors, in order */
    struct wk_frame *outer; /* the context below this one on the thread */
} wk_frame;

static _Thread_local wk_frame *frame_top;    /* the innermost packing or collecting frame */
static _Thread_local wk_frame *frame_target; /* the frame the engine asked the host to recompute */

static void frame_release(wk_frame *f) {
    if (!f || __atomic_sub_fetch(&f->refcount, 1, __ATOMIC_ACQ_REL) != 0) return;
    for (int i = 0; i < f->count; i++) {
        if (f->tensors) wick_tensor_release(f->tensors[i]);
        if (f->nodes) wk_node_release(f->nodes[i]);
    }
    free(f->nodes);
    free(f->slots);
    free(f->tensors);
    wk_id_queue_push(&hooks_released, f->id); /* the host forgets its function */
    free(f);
}

wick_status wick_checkpoint_begin(int64_t *id) {
    wk_frame *f = calloc(1, sizeof *f);
    if (!f) return wick_fail(WICK_ERR_OOM, "checkpoint: out of memory");
    f->refcount = 1;
    f->id = *id = __atomic_add_fetch(&hook_ids, 1, __ATOMIC_RELAXED);
    f->outer = frame_top;
    frame_top = f;
    return WICK_OK;
}

wick_status wick_checkpoint_end(int64_t id) {
    wk_frame *f = frame_top;
    if (!f || f->id != id || f->collecting) return wick_fail(WICK_ERR_ARGUMENT, "checkpoint: %" PRId64 " is not the innermost checkpoint", id);
    frame_top = f->outer;
    frame_release(f);
    return WICK_OK;
}

wick_status wick_checkpoint_recompute_begin(int64_t id) {
    wk_frame *f = frame_target;
    if (!f || f->id != id || f->collecting || f->recomputed)
        return wick_fail(WICK_ERR_ARGUMENT, "checkpoint: %" PRId64 " is not being recomputed", id);
    f->collecting = true;
    f->outer = frame_top;
    frame_top = f;
    return WICK_OK;
}

wick_status wick_checkpoint_recompute_end(int64_t id) {
    wk_frame *f = frame_top;
    if (!f || f->id != id || !f->collecting) return wick_fail(WICK_ERR_ARGUMENT, "checkpoint: %" PRId64 " is not being recomputed", id);
    frame_top = f->outer;
    f->collecting = false;
    f->recomputed = true;
    wick_status st = WICK_OK;
    if (f->count != f->saves)
        st = wick_fail(WICK_ERR_ARGUMENT,
                       "checkpoint (use_reentrant = false): the function saved %d tensors for backward when run again, "
                       "%d the first time; it must do the same work both times (the same branches, the same random draws)",
                       f->count, f->saves);
    if (!st && f->count && !(f->tensors = calloc((size_t)f->count, sizeof *f->tensors)))
        st = wick_fail(WICK_ERR_OOM, "checkpoint: out of memory");
    for (int i = 0; i < f->count; i++) { /* as the nodes hold them now */
        if (!st) {
            f->tensors[i] = f->nodes[i]->saved[f->slots[i]];
            wick_tensor_retain(f->tensors[i]);
        }
        wk_node_release(f->nodes[i]);
    }
    free(f->nodes);
    free(f->slots);
    f->nodes = NULL, f->slots = NULL;
    if (st) f->count = 0;
    return st;
}

/* A save while a frame packs (true: nothing kept) or collects (noted). */
static wick_status frame_save(wk_node *node, int slot, bool *packed) {
    wk_frame *f = frame_top;
    *packed = false;
    if (!f) return WICK_OK;
    if (!f->collecting) {
        if (node->frame && node->frame != f) return WICK_OK; /* (a node of another checkpoint keeps its tensor) */
        if (!node->frame) {
            __atomic_add_fetch(&f->refcount, 1, __ATOMIC_RELAXED);
            node->frame = f;
        }
        wick_tensor_release(node->saved[slot]);
        node->saved[slot] = NULL;
        node->frame_slot[slot] = ++f->saves;
        *packed = true;
        return WICK_OK;
    }
    if (f->count == f->cap) {
        int cap = f->cap ? 2 * f->cap : 16;
        wk_node **nodes = realloc(f->nodes, (size_t)cap * sizeof *nodes);
        if (nodes) f->nodes = nodes;
        int *slots = realloc(f->slots, (size_t)cap * sizeof *slots);
        if (slots) f->slots = slots;
        if (!nodes || !slots) return wick_fail(WICK_ERR_OOM, "checkpoint: out of memory");
        f->cap = cap;
    }
    __atomic_add_fetch(&node->refcount, 1, __ATOMIC_RELAXED);
    f->nodes[f->count] = node;
    f->slots[f->count++] = slot;
    return WICK_OK;
}

/* Before n's backward: its saved tensors from its checkpoint's recomputation
 * (which the host runs the first time one of its nodes needs it). */
static wick_status frame_unpack(const wick_backward_args *a, wk_node *n) {
    if (a->create_graph) /* (the recomputed tensors have no history to differentiate again) */
        return wick_fail(WICK_ERR_ARGUMENT, "create_graph through a checkpoint with use_reentrant = false is not "
                                            "supported: call the function without checkpointing");
    wk_frame *f = n->frame;
    if (!f) return WICK_OK; /* unpacked by an earlier backward */
    if (!f->recomputed) {
        if (!a->hook)
            return wick_fail(WICK_ERR_ARGUMENT, "backward through a checkpoint (use_reentrant = false) needs the host "
                                                "that made it to recompute it (wick_backward_ex with its hook)");
        wk_frame *prev = frame_target;
        int mode = wk_grad_mode;
        frame_target = f;
        wk_grad_mode = 1; /* (the run records, to save what its ops save) */
        wick_status st = a->hook(a->ud, WICK_HOOK_RECOMPUTE, NULL, f->id, NULL);
        wk_grad_mode = mode;
        frame_target = prev;
        if (st) return st;
        if (!f->recomputed) return wick_fail(WICK_ERR_ARGUMENT, "checkpoint: the host did not recompute checkpoint %" PRId64, f->id);
    }
    for (int i = 0; i < WK_MAX_SAVED; i++) {
        int k = n->frame_slot[i];
        if (!k) continue;
        if (k > f->count) return wick_fail(WICK_ERR_ARGUMENT, "checkpoint: its recomputation saved no tensor %d", k);
        wick_tensor *s = f->tensors[k - 1];
        wick_tensor_retain(s);
        wick_tensor_release(n->saved[i]);
        n->saved[i] = s;
        n->saved_version[i] = wk_grad_version(s->storage);
        n->frame_slot[i] = 0;
    }
    n->frame = NULL;
    n->recomputed = true;
    frame_release(f);
    return WICK_OK;
}

wick_status wk_save(wk_node *node, int slot, const wick_tensor *t, const wick_tensor *out) {
    wick_tensor *s;
    bool packed;
    wick_status st = frame_save(node, slot, &packed);
    if (st) return st;
    if (packed) {
        if (t == out) node->saved_output |= (unsigned char)(1u << slot);
        else node->saved_output &= (unsigned char)~(1u << slot);
        return WICK_OK;
    }
    if (t == out) { /* an alias without grad_fn: no cycle through the node */
        st = wk_tensor_view(&s, t, t->ndim, t->sizes, t->strides, t->offset);
        if (st) return st;
        /* counted as a detached alias: an in-place op on the output is then
         * allowed, and a backward that would read the changed values raises
         * (check_saved_versions), as in PyTorch */
        s->detached_alias = true;
        __atomic_add_fetch(&s->storage->aliases, 1, __ATOMIC_RELAXED);
        node->saved_output |= (unsigned char)(1u << slot);
    } else {
        node->saved_output &= (unsigned char)~(1u << slot);
        s = (wick_tensor *)t;
        wick_tensor_retain(s);
    }
    wick_tensor_release(node->saved[slot]);
    node->saved[slot] = s;
    node->saved_version[slot] = wk_grad_version(s->storage);
    return WICK_OK;
}

/* A saved tensor written in place since it was saved would give wrong
 * gradients without a word; PyTorch's check, with its wording. */
static wick_status check_saved_versions(const wk_node *n) {
    for (int i = 0; i < WK_MAX_SAVED; i++) {
        const wick_tensor *s = n->saved[i];
        if (!s) continue;
        unsigned now = wk_grad_version(s->storage);
        if (now == n->saved_version[i]) continue;
        char shape[WK_SHAPE_BUF];
        return wick_fail(WICK_ERR_ARGUMENT,
                         "one of the variables needed for gradient computation has been modified by an inplace "
                         "operation: [%s %s], saved by %s, is at version %u; expected version %u instead. "
                         "Use an out-of-place op (x = x * y) or :clone() the tensor before changing it",
                         wick_dtype_name(s->dtype), wk_shape_str(s->ndim, s->sizes, shape, sizeof shape), n->name,
                         now, n->saved_version[i]);
    }
    return WICK_OK;
}

/* A view whose in-place write can rewrite its base's history: its base still
 * on its storage and laid out contiguously (the view's place in it is then
 * its offset and strides), the view inside it. */
static bool writes_through_base(const wick_tensor *v) {
    const wick_tensor *b = v->view_base;
    if (!b || v->detached_alias || b->detached_alias || b->storage != v->storage || !wick_tensor_is_contiguous(b))
        return false;
    int64_t lo = v->offset - b->offset, hi = lo, numel = wick_tensor_numel(b);
    if (wick_tensor_numel(v) == 0) return lo >= 0 && lo <= numel; /* (writes nothing: pytorch-fm's a[:, t+1:] += ...) */
    for (int i = 0; i < v->ndim; i++) {
        if (v->strides[i] < 0) return false;
        hi += (v->sizes[i] - 1) * v->strides[i];
    }
    return lo >= 0 && hi < numel;
}

void wk_note_view_base(wick_tensor *v, const wick_tensor *t) {
    v->nograd_view = !wk_grad_mode || t->nograd_view;
    if (!wk_grad_mode || t->detached_alias) return;
    wick_tensor *b = t->view_base && t->view_base->storage == t->storage ? t->view_base : (wick_tensor *)t;
    wick_tensor_retain(b);
    wick_tensor_release(v->view_base);
    v->view_base = b;
    v->view_version = __atomic_load_n(&v->storage->version, __ATOMIC_RELAXED);
}

/* The tensors on target's storage other than target and its detached aliases. */
static int others_on_storage(const wick_tensor *target) {
    return __atomic_load_n(&target->storage->refcount, __ATOMIC_ACQUIRE) -
           __atomic_load_n(&target->storage->aliases, __ATOMIC_ACQUIRE) - (target->detached_alias ? 0 : 1);
}

wick_status wk_check_inplace(const char *op, const wick_tensor *target, int n, const wick_tensor *const *inputs,
                             bool *record) {
    wick_status rst = wk_grad_mode ? wk_refresh_view(target) : WICK_OK; /* before the write's version */
    wk_bump_version(target); /* also after a failed check: a version may only grow */
    if (record) *record = false;
    if (rst) return rst;
    if (!wk_grad_mode) return WICK_OK;
    if (target->requires_grad && !target->grad_fn)
        return wick_fail(WICK_ERR_ARGUMENT,
                         "%s: a leaf tensor that requires grad is used in an in-place operation; "
                         "wrap the update in wick.no_grad(...)",
                         op);
    if (!target->requires_grad && !wk_wants_grad(n, inputs)) return WICK_OK;
    if (!record)
        return wick_fail(WICK_ERR_UNSUPPORTED,
                         "%s: this in-place operation is not supported on tensors that autograd tracks; use the "
                         "out-of-place form or wick.no_grad(...)",
                         op);
    /* another tensor on the storage (a view, or a value saved for backward)
     * would see the new values without a graph that says so; detached ones
     * (wick_detach: t:detach(), p.data) share values only, as in PyTorch. A
     * write through a detached alias is the user's update of the values
     * (buf.data:add_(y), an EMA of a tracked result): the alias records it
     * and the tensors it came from see the values only, as in PyTorch (a
     * value saved for backward still refuses it then, by its version). */
    /* A view whose base is contiguous: the write rewrites the base's history
     * (copy_slices), and the other views of the base, or the base itself when
     * it is the target, get theirs again when next used (wk_refresh_view);
     * values saved for backward refuse the backward by their versions. */
    if (writes_through_base(target)) {
        if (target->view_base->requires_grad && !target->view_base->grad_fn)
            return wick_fail(WICK_ERR_ARGUMENT,
                             "%s: a view of a leaf tensor that requires grad is used in an in-place operation; "
                             "wrap the update in wick.no_grad(...)",
                             op);
        *record = true;
        return WICK_OK;
    }
    int others = others_on_storage(target);
    if (others != 0 && !target->detached_alias) { /* a view dead but not yet collected (x[1] = x[1] * 2) counts too */
        wk_host_collect();
        others = others_on_storage(target);
    }
    if (others != 0 && !target->view_base && !target->detached_alias && wick_tensor_is_contiguous(target)) {
        /* a base with views: theirs are made again when next used */
        *record = true;
        return WICK_OK;
    }
    if (others != 0 && !target->detached_alias)
        return wick_fail(WICK_ERR_UNSUPPORTED,
                         "%s: in-place operation on a tensor that autograd tracks while another tensor shares its "
                         "storage (a view of it, or a value saved for backward); use the out-of-place form "
                         "(e.g. x = x + y)",
                         op);
    *record = true;
    return WICK_OK;
}

/* ---- writes through a view (PyTorch's CopySlices) ----
 * A view's place in its contiguous base: [offset from the base's, ndim, sizes,
 * strides], kept as a small CPU int64 tensor in the nodes below. */
static wick_status view_plan(wick_tensor **out, const wick_tensor *v, const wick_tensor *base) {
    int64_t p[2 + 2 * WICK_MAX_DIMS], len = 2 + 2 * v->ndim;
    p[0] = v->offset - base->offset, p[1] = v->ndim;
    memcpy(p + 2, v->sizes, sizeof(int64_t) * v->ndim);
    memcpy(p + 2 + v->ndim, v->strides, sizeof(int64_t) * v->ndim);
    return wick_from_int64(out, 1, &len, p, (wick_options){WICK_INT64, {WICK_CPU, -1}});
}

/* The region of the contiguous tensor `t` (the base's shape) that plan names. */
static wick_status plan_region(wick_tensor **out, const wick_tensor *t, const wick_tensor *plan) {
    const int64_t *p = (const int64_t *)wk_data(plan);
    int ndim = (int)p[1];
    return wk_tensor_view(out, t, ndim, p + 2, p + 2 + ndim, t->offset + p[0]);
}

/* The three linear maps of a write through a view, between the view's shape
 * and its base's (plan: the view's place in the base): EMBED (zeros of the
 * base's shape, the region g), EXTRACT (the region of g), ZERO (g with the
 * region zeroed). EMBED and EXTRACT are each other's adjoint and ZERO its own,
 * so under create_graph each result is recorded as that map's output with its
 * adjoint as backward: gradients of gradients to any order. */
enum { WK_REGION_EMBED, WK_REGION_EXTRACT, WK_REGION_ZERO };
static const char *const region_names[] = {"EmbedRegionBackward", "ExtractRegionBackward", "ZeroRegionBackward"};

static wick_status region_map(wick_tensor **out, int kind, wick_tensor *g, const wick_tensor *plan, int ndim,
                              const int64_t *sizes);

static wick_status region_backward(wk_node *n, wick_tensor *g, wick_tensor **grads) {
    static const int adjoint[] = {WK_REGION_EXTRACT, WK_REGION_EMBED, WK_REGION_ZERO};
    return region_map(&grads[0], adjoint[n->op], g, n->saved[0], n->ndim, n->sizes);
}

/* *out = kind(g), computed (without grad); ndim, sizes: the base's shape (EMBED's result) */
static wick_status region_compute(wick_tensor **out, int kind, wick_tensor *g, const wick_tensor *plan, int ndim,
                                  const int64_t *sizes) {
    wick_tensor *r = NULL, *region = NULL;
    wick_status st;
    if (kind == WK_REGION_EMBED) {
        st = wick_full(&r, ndim, sizes, 0, (wick_options){g->dtype, g->storage->device});
        if (!st) st = plan_region(&region, r, plan);
        /* an expanded view (stride 0) holds one element many times: its gradient is their sum
         * (torchvision's img.mul_(mask.expand_as(img)) on sibling views) */
        wick_tensor *gs = g, *next = NULL;
        wick_tensor_retain(gs);
        for (int i = 0; !st && region && i < region->ndim; i++) {
            if (region->strides[i] != 0 || region->sizes[i] <= 1) continue;
            if (!(st = wick_reduce(&next, NULL, WICK_SUM, gs, i, 1, 0))) wick_tensor_release(gs), gs = next;
            if (!st && !(st = wick_narrow(&next, region, i, 0, 1))) wick_tensor_release(region), region = next;
        }
        if (!st) st = wick_copy_(region, gs);
        wick_tensor_release(gs);
    } else {
        wick_tensor *gc = NULL; /* contiguous, and ours to change */
        st = wick_clone(&gc, g);
        if (!st) st = plan_region(&region, gc, plan);
        if (!st && kind == WK_REGION_EXTRACT) st = wick_clone(&r, region);
        else if (!st && !(st = wick_fill_(region, 0))) r = gc, gc = NULL;
        wick_tensor_release(gc);
    }
    wick_tensor_release(region);
    if (st) return wick_tensor_release(r), st;
    *out = r;
    return WICK_OK;
}

/* *out = kind(g), with its history under create_graph */
static wick_status region_map(wick_tensor **out, int kind, wick_tensor *g, const wick_tensor *plan, int ndim,
                              const int64_t *sizes) {
    wick_tensor *r = NULL;
    wick_status st;
    WK_NO_GRAD(st = region_compute(&r, kind, g, plan, ndim, sizes));
    const wick_tensor *in = g;
    if (!st && wk_wants_grad(1, &in)) { /* create_graph: r's history, its adjoint as backward */
        wk_node *m = NULL;
        st = wk_record(r, region_names[kind], region_backward, kind, 1, &in, &m);
        if (!st) {
            m->twice = true;
            m->ndim = g->ndim; /* EXTRACT's input is base-shaped: its adjoint EMBED makes that shape */
            memcpy(m->sizes, g->sizes, sizeof(int64_t) * g->ndim);
            st = wk_save(m, 0, plan, r);
        }
    }
    if (st) return wick_tensor_release(r), st;
    *out = r;
    return WICK_OK;
}

/* base_new = base_old with the view's region replaced by the value: the old
 * base's gradient is g with zeros there, the value's is g's region. */
static wick_status copy_slices_backward(wk_node *n, wick_tensor *g, wick_tensor **grads) {
    wick_status st = WICK_OK;
    if (n->edges[1].leaf || n->edges[1].node) st = region_map(&grads[1], WK_REGION_EXTRACT, g, n->saved[0], 0, NULL);
    if (!st && (n->edges[0].leaf || n->edges[0].node))
        st = region_map(&grads[0], WK_REGION_ZERO, g, n->saved[0], 0, NULL);
    return st;
}

/* the view's new history: its region of the base (zeros elsewhere) */
static wick_status view_of_base_backward(wk_node *n, wick_tensor *g, wick_tensor **grads) {
    return region_map(&grads[0], WK_REGION_EMBED, g, n->saved[0], n->ndim, n->sizes);
}

/* v's history: the region `plan` of its base's current one */
static wick_status record_view_of_base(wick_tensor *v, const wick_tensor *base, const wick_tensor *plan) {
    wk_node *n = NULL;
    wick_status st = wk_record(v, "AsStridedBackward", view_of_base_backward, 0, 1, &base, &n);
    if (st) return st;
    n->twice = true; /* region_map records its results' histories under create_graph */
    n->ndim = base->ndim;
    memcpy(n->sizes, base->sizes, sizeof(int64_t) * base->ndim);
    return wk_save(n, 0, plan, NULL);
}

/* The view `v` took `result`'s values (already written): its base's node
 * becomes CopySlices(old base, result), and v a view of the new base. */
static wick_status copy_slices(wick_tensor *v, wick_tensor *result) {
    wick_tensor *base = v->view_base, *plan;
    wick_status st = view_plan(&plan, v, base);
    if (st) return st;
    const wick_tensor *ins[2] = {base, result};
    wk_node *n = NULL;
    st = wk_record(base, "CopySlices", copy_slices_backward, 0, 2, ins, &n);
    if (!st) n->twice = true; /* region_map records its results' histories under create_graph */
    if (!st) st = wk_save(n, 0, plan, NULL);
    if (!st) st = record_view_of_base(v, base, plan);
    wick_tensor_release(plan);
    v->view_version = __atomic_load_n(&v->storage->version, __ATOMIC_RELAXED);
    return st;
}

wick_status wk_refresh_view(const wick_tensor *t) {
    wick_tensor *v = (wick_tensor *)t, *base = v->view_base, *plan;
    if (!base || base->storage != v->storage) return WICK_OK;
    unsigned now = __atomic_load_n(&v->storage->version, __ATOMIC_RELAXED);
    if (now == v->view_version) return WICK_OK;
    if (!base->requires_grad || !writes_through_base(v)) { /* nothing to see, or no place to see it from */
        v->view_version = now;
        return WICK_OK;
    }
    wick_status st = view_plan(&plan, v, base);
    if (st) return st;
    v->view_version = now;
    st = record_view_of_base(v, base, plan);
    wick_tensor_release(plan);
    if (st) v->view_version = now - 1; /* try again next time */
    return st;
}

wick_status wk_adopt_inplace(wick_tensor *target, wick_tensor *result) {
    wk_node *node = result->grad_fn;
    wick_status st = WICK_OK;
    if (node && target->nograd_view) /* (PyTorch's rule and words: the write would reach no history) */
        return wick_fail(WICK_ERR_ARGUMENT,
                         "A view was created in no_grad mode and is being modified inplace with grad mode enabled. "
                         "Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify "
                         "your code by moving both the view and the inplace either both inside the no_grad block "
                         "(if you don't want the inplace to be tracked) or both outside (if you want the inplace "
                         "to be tracked).");
    /* the node may have saved target's values before the write: keep a copy,
     * recorded (its history is the old values', for create_graph) */
    for (int i = 0; node && i < WK_MAX_SAVED && !st; i++) {
        wick_tensor *s = node->saved[i], *copy;
        if (!s || s->storage != target->storage) continue;
        st = wick_clone(&copy, s);
        if (st) break;
        wick_tensor_release(s);
        node->saved[i] = copy;
        node->saved_version[i] = wk_grad_version(copy->storage);
    }
    if (!st) WK_COUNTED(target->storage, WK_NO_GRAD(st = wick_copy_(target, result)));
    if (st) return st;
    if (writes_through_base(target)) return copy_slices(target, result); /* (an untracked result: a constant region) */
    if (node) __atomic_add_fetch(&node->refcount, 1, __ATOMIC_RELAXED);
    move_retain(target->grad_fn, node);
    wk_node_release(target->grad_fn);
    target->grad_fn = node;
    target->requires_grad = node != NULL;
    return WICK_OK;
}

/* ---- the engine ---- */

/* whether t's leading ndim sizes are `sizes` (a gradient that needs no summing) */
static bool sizes_equal(const wick_tensor *t, int ndim, const int64_t *sizes) {
    if (t->ndim != ndim) return false;
    for (int i = 0; i < ndim; i++)
        if (t->sizes[i] != sizes[i]) return false;
    return true;
}

/* A float16 or bfloat16 gradient is summed in float32 and rounded once at the end, as PyTorch's
 * reduction does (one dim at a time in the low dtype rounds after each: a broadcast bf16 scalar's
 * gradient drifted by a third). */
wick_status wk_sum_to(wick_tensor **out, wick_tensor *grad, int ndim, const int64_t *sizes) {
    wick_tensor *g = grad, *r;
    wick_dtype low = grad->dtype;
    bool widen = (low == WICK_FLOAT16 || low == WICK_BFLOAT16) && (grad->ndim > ndim || !sizes_equal(grad, ndim, sizes));
    wick_status st = WICK_OK;
    if (widen) {
        if ((st = wick_to(&g, grad, (wick_options){WICK_FLOAT32, grad->storage->device}))) return st;
    } else {
        wick_tensor_retain(g);
    }
    while (g->ndim > ndim && !st) { /* leading broadcast dims */
        if (!(st = wick_reduce(&r, NULL, WICK_SUM, g, 0, 0, 0))) {
            wick_tensor_release(g);
            g = r;
        }
    }
    for (int i = 0; i < ndim && !st; i++) {
        if (sizes[i] != 1 || g->sizes[i] == 1) continue;
        if (!(st = wick_reduce(&r, NULL, WICK_SUM, g, i, 1, 0))) {
            wick_tensor_release(g);
            g = r;
        }
    }
    if (!st && widen) {
        st = wick_to(&r, g, (wick_options){low, g->storage->device});
        if (!st) {
            wick_tensor_release(g);
            g = r;
        }
    }
    if (st) {
        wick_tensor_release(g);
        return st;
    }
    *out = g;
    return WICK_OK;
}

/* Gives a gradient the shape, dtype and device of the input it belongs to. */
static wick_status fit_to_edge(wick_tensor **g, const wk_edge *e) {
    wick_tensor *r;
    wick_status st;
    if ((*g)->ndim != e->ndim || memcmp((*g)->sizes, e->sizes, sizeof(int64_t) * e->ndim) != 0) {
        if ((st = wk_sum_to(&r, *g, e->ndim, e->sizes))) return st;
        wick_tensor_release(*g);
        *g = r;
    }
    if ((*g)->dtype != e->dtype || !wick_device_equal((*g)->storage->device, e->device)) {
        if ((st = wick_to(&r, *g, (wick_options){e->dtype, e->device}))) return st;
        wick_tensor_release(*g);
        *g = r;
    }
    return WICK_OK;
}

bool wk_engine_owned(const wick_tensor *t) {
    return t->refcount == 1 && t->storage->refcount == 1 && !t->grad_fn && !t->requires_grad && t->offset == 0 &&
           wick_tensor_is_contiguous(t);
}

/* *acc += g (taking over g's reference): in place when the engine owns *acc. */
static wick_status accumulate(wick_tensor **acc, wick_tensor *g) {
    if (!*acc) {
        *acc = g;
        return WICK_OK;
    }
    if (wk_engine_owned(*acc) && (*acc)->dtype == g->dtype && (*acc)->ndim == g->ndim &&
        memcmp((*acc)->sizes, g->sizes, sizeof(int64_t) * g->ndim) == 0 &&
        wick_device_equal((*acc)->storage->device, g->storage->device)) {
        wick_status st = wick_binary_(WICK_ADD, *acc, g);
        wick_tensor_release(g);
        return st;
    }
    wick_tensor *sum;
    wick_status st = wick_binary(&sum, WICK_ADD, *acc, g);
    wick_tensor_release(g);
    if (st) return st;
    wick_tensor_release(*acc);
    *acc = sum;
    return WICK_OK;
}

static wick_status accumulate_leaf(wick_tensor *leaf, wick_tensor *g) {
    wick_status st;
    /* g fits the leaf as the graph saw it; the leaf may have taken other data
     * since (wick_tensor_set_, model:to): its .grad must fit what it is now */
    if (g->dtype != leaf->dtype || !wick_device_equal(g->storage->device, leaf->storage->device) ||
        g->ndim != leaf->ndim || memcmp(g->sizes, leaf->sizes, sizeof(int64_t) * leaf->ndim) != 0) {
        char was[WK_SHAPE_BUF], now[WK_SHAPE_BUF], dw[32], dn[32];
        st = wick_fail(WICK_ERR_ARGUMENT,
                       "backward: a leaf was %s %s on %s when the graph was built and is %s %s on %s now (it took "
                       "other data: model:to or set_ between the forward and backward); run the forward again",
                       wick_dtype_name(g->dtype), wk_shape_str(g->ndim, g->sizes, was, sizeof was),
                       wick_device_format(g->storage->device, dw, sizeof dw), wick_dtype_name(leaf->dtype),
                       wk_shape_str(leaf->ndim, leaf->sizes, now, sizeof now),
                       wick_device_format(leaf->storage->device, dn, sizeof dn));
        wick_tensor_release(g);
        return st;
    }
    if (!leaf->grad) {
        /* .grad is a tensor of its own, never a view of another: adopt g when
         * nothing else can see it, else copy it */
        bool alone = g->refcount == 1 && g->storage->refcount == 1 && !g->grad_fn && !g->requires_grad &&
                     wick_tensor_is_contiguous(g) && g->offset == 0;
        if (alone) {
            leaf->grad = g;
            return WICK_OK;
        }
        st = wick_clone(&leaf->grad, g);
        wick_tensor_release(g);
        return st;
    }
    if (wk_grad_mode && (g->requires_grad || leaf->grad->requires_grad)) { /* create_graph: a recorded sum */
        wick_tensor *sum;
        st = wick_binary(&sum, WICK_ADD, leaf->grad, g);
        wick_tensor_release(g);
        if (st) return st;
        wick_tensor_release(leaf->grad);
        leaf->grad = sum;
        return WICK_OK;
    }
    st = wick_binary_(WICK_ADD, leaf->grad, g);
    wick_tensor_release(g);
    return st;
}

typedef struct {
    wk_node **items;
    int count, cap;
} node_list;

static bool push(node_list *l, wk_node *n) {
    if (l->count == l->cap) {
        int cap = l->cap ? l->cap * 2 : 64;
        wk_node **items = realloc(l->items, sizeof *items * (size_t)cap);
        if (!items) return false;
        l->items = items, l->cap = cap;
    }
    l->items[l->count++] = n;
    return true;
}

/* Nodes reachable from the roots (NULL entries skipped) in depth-first
 * postorder: inputs before users. */
static wick_status topo_order(int n_roots, wk_node *const *roots, node_list *order) {
    static _Thread_local int generation = 0;
    int mark = ++generation;
    node_list stack = {0};
    wick_status st = WICK_OK;
    for (int r = 0; r < n_roots && !st; r++) {
        wk_node *root = roots[r];
        if (!root || root->mark == mark) continue;
        root->mark = mark;
        root->pending = 0;
        if (!push(&stack, root)) st = WICK_ERR_OOM;
    while (!st && stack.count) {
        wk_node *n = stack.items[stack.count - 1];
        bool descended = false;
        /* `pending` counts the edges already explored while n is on the stack */
        while (n->pending < n->n_inputs) {
            wk_node *child = n->edges[n->pending++].node;
            if (!child || child->mark == mark) continue;
            child->mark = mark;
            child->pending = 0;
            if (!push(&stack, child)) {
                st = WICK_ERR_OOM;
                break;
            }
            descended = true;
            break;
        }
        if (st || descended) continue;
        stack.count--;
        if (!push(order, n)) st = WICK_ERR_OOM;
    }
    }
    free(stack.items);
    return st ? wick_fail(WICK_ERR_OOM, "out of memory walking the autograd graph") : WICK_OK;
}

static int by_seq(const void *a, const void *b) {
    uint64_t x = (*(wk_node *const *)a)->seq, y = (*(wk_node *const *)b)->seq;
    return x < y ? -1 : x > y;
}
/* The nodes of a topological order (inputs before users) sorted by creation, so backward runs
 * the latest first, as PyTorch's engine does (its ready queue by sequence number): the
 * gradients that meet at a tensor are then summed in PyTorch's order, the same rounding.
 * A consumer is made after its inputs, so that order is topological; where an edge says
 * otherwise, the depth-first order stays. */
static void order_by_creation(node_list *order) {
    if (order->count < 2) return;
    wk_node **sorted = malloc((size_t)order->count * sizeof *sorted);
    if (!sorted) return; /* (the depth-first order is as right) */
    memcpy(sorted, order->items, (size_t)order->count * sizeof *sorted);
    qsort(sorted, (size_t)order->count, sizeof *sorted, by_seq);
    bool topological = true;
    for (int i = 0; i < order->count && topological; i++)
        for (int j = 0; j < sorted[i]->n_inputs; j++) {
            const wk_node *in = sorted[i]->edges[j].node;
            if (in && in->seq >= sorted[i]->seq) topological = false;
        }
    if (topological) memcpy(order->items, sorted, (size_t)order->count * sizeof *sorted);
    free(sorted);
}

wick_status wick_graph_reaches_other_leaf(const wick_tensor *t, int n, const wick_tensor *const *leaves,
                                          int *out) {
    static _Thread_local int generation = 0;
    int mark = ++generation;
    *out = 0;
    if (!t->grad_fn) return WICK_OK;
    node_list stack = {0};
    t->grad_fn->reach_mark = mark;
    if (!push(&stack, t->grad_fn)) return wick_fail(WICK_ERR_OOM, "out of memory walking the autograd graph");
    while (stack.count && !*out) {
        wk_node *node = stack.items[--stack.count];
        for (int i = 0; i < node->n_inputs && !*out; i++) {
            const wk_edge *e = &node->edges[i];
            if (e->leaf) {
                bool listed = false;
                for (int j = 0; j < n && !listed; j++) listed = leaves[j] == e->leaf;
                *out = !listed;
            } else if (e->node && e->node->reach_mark != mark) {
                e->node->reach_mark = mark;
                if (!push(&stack, e->node)) {
                    free(stack.items);
                    return wick_fail(WICK_ERR_OOM, "out of memory walking the autograd graph");
                }
            }
        }
    }
    free(stack.items);
    return WICK_OK;
}

/* ---- hooks ----
 * A hooked tensor (hook_id != 0) has its hooks in the host (the binding keeps
 * Lua functions by id). A non-leaf's id is also on its node: the grad hook runs
 * on the node's summed gradient before its backward. A hooked leaf's gradients
 * of one backward are summed apart; after the last node with an edge to it ran
 * (the walk counts the leaf's edges among the reachable nodes first, and every
 * node, also one that nothing flowed through, takes its edges off), the grad
 * hook may replace the sum, which is accumulated into .grad, and then the
 * post-accumulate-grad hook runs: each once per backward. */


int64_t wick_hook_id(wick_tensor *t, int create) {
    int64_t id = __atomic_load_n(&t->hook_id, __ATOMIC_ACQUIRE), none = 0;
    if (id && create && t->grad_fn && !t->grad_fn->hook_id) {
        /* an in-place op gave t a new history since its hooks were registered: they stay
         * with the old version (its node keeps the id, PyTorch's), and the new version's
         * hooks get an id of their own */
        none = id;
        int64_t fresh = __atomic_add_fetch(&hook_ids, 1, __ATOMIC_RELAXED);
        id = __atomic_compare_exchange_n(&t->hook_id, &none, fresh, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE) ? fresh : none;
        none = 0;
    }
    if (!id && create) {
        id = __atomic_add_fetch(&hook_ids, 1, __ATOMIC_RELAXED);
        if (!__atomic_compare_exchange_n(&t->hook_id, &none, id, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            id = none; /* another thread gave it one first */
    }
    if (id && create && t->grad_fn && !t->grad_fn->hook_id) t->grad_fn->hook_id = id;
    return id;
}

int64_t wick_retain_grad_id(wick_tensor *t) {
    wk_node *n = t->grad_fn;
    if (!n) return 0;
    int64_t id = __atomic_load_n(&n->retain_id, __ATOMIC_ACQUIRE), none = 0;
    if (!id) {
        id = __atomic_add_fetch(&hook_ids, 1, __ATOMIC_RELAXED);
        if (!__atomic_compare_exchange_n(&n->retain_id, &none, id, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            id = none; /* another thread gave it one first */
    }
    return id;
}

typedef struct {
    wick_tensor *leaf;
    int pending;       /* edges to the leaf whose node has not run yet */
    wick_tensor *grad; /* the leaf's gradient in this backward so far */
} hook_count;

typedef struct {
    wick_autograd_hook fn;
    void *ud;
    hook_count *items;
    int count;
} hook_plan;

static int compare_counts(const void *a, const void *b) {
    uintptr_t x = (uintptr_t)((const hook_count *)a)->leaf, y = (uintptr_t)((const hook_count *)b)->leaf;
    return x < y ? -1 : x > y;
}

static bool hooked_edge(const wk_edge *e) { return e->leaf && __atomic_load_n(&e->leaf->hook_id, __ATOMIC_RELAXED); }

/* Counts the edges to hooked leaves of the nodes in `order` (one entry per leaf). */
static wick_status plan_hooks(hook_plan *p, const node_list *order) {
    int n = 0;
    if (!p->fn || !__atomic_load_n(&hook_ids, __ATOMIC_RELAXED)) return WICK_OK; /* no tensor was ever hooked */
    for (int i = 0; i < order->count; i++)
        for (int j = 0; j < order->items[i]->n_inputs; j++) n += hooked_edge(&order->items[i]->edges[j]);
    if (!n) return WICK_OK;
    if (!(p->items = malloc(sizeof *p->items * (size_t)n)))
        return wick_fail(WICK_ERR_OOM, "out of memory planning the backward hooks");
    for (int i = 0; i < order->count; i++)
        for (int j = 0; j < order->items[i]->n_inputs; j++)
            if (hooked_edge(&order->items[i]->edges[j]))
                p->items[p->count++] = (hook_count){order->items[i]->edges[j].leaf, 1, NULL};
    qsort(p->items, (size_t)p->count, sizeof *p->items, compare_counts);
    int k = 0;
    for (int i = 0; i < p->count; i++) {
        if (k && p->items[k - 1].leaf == p->items[i].leaf) p->items[k - 1].pending++;
        else p->items[k++] = p->items[i];
    }
    p->count = k;
    return WICK_OK;
}

static void free_plan(hook_plan *p) {
    for (int i = 0; i < p->count; i++) wick_tensor_release(p->items[i].grad);
    free(p->items);
}

static hook_count *find_count(const hook_plan *p, const wick_tensor *leaf) {
    if (!p->count) return NULL;
    hook_count key = {(wick_tensor *)leaf, 0, NULL};
    return bsearch(&key, p->items, (size_t)p->count, sizeof key, compare_counts);
}

/* A hooked leaf's whole gradient of this backward (taking g's reference): the
 * grad hook, the accumulation into .grad, the post-accumulate-grad hook. */
static wick_status finish_leaf(wick_autograd_hook fn, void *ud, wick_tensor *leaf, wick_tensor *g) {
    int64_t id = __atomic_load_n(&leaf->hook_id, __ATOMIC_RELAXED);
    wick_status st = fn(ud, WICK_HOOK_GRAD, leaf, id, &g);
    if (st) {
        wick_tensor_release(g);
        return st;
    }
    if ((st = accumulate_leaf(leaf, g))) return st;
    return fn(ud, WICK_HOOK_POST_ACCUMULATE, leaf, id, NULL);
}

/* Node n ran (or nothing flowed through it): its edges to hooked leaves are
 * done; a leaf whose last edge this was and that got a gradient is finished. */
static wick_status settle_hooks(hook_plan *p, const wk_node *n) {
    for (int j = 0; j < n->n_inputs; j++) {
        hook_count *c = n->edges[j].leaf ? find_count(p, n->edges[j].leaf) : NULL;
        if (!c || --c->pending > 0 || !c->grad) continue;
        wick_tensor *g = c->grad;
        c->grad = NULL;
        wick_status st = finish_leaf(p->fn, p->ud, c->leaf, g);
        if (st) return st;
    }
    return WICK_OK;
}

/* While a profile records, each node's backward is an event named after the
 * node ("MulBackward"), inside the op that runs the backward; timed on the GPU
 * too when its gradient is there. */
static int64_t profile_node(const wk_node *n) {
    int64_t event = wick_profiler_begin(wick_profiler_intern(n->name), -1, NULL);
    if (event >= 0 && n->grad) wick_profiler_time_device(event, n->grad->storage->device);
    return event;
}

/* ---- one backward: what it computes, and the walk ---- */

typedef struct {
    const wick_backward_args *a;
    int capture;        /* only the gradients of a->inputs (into grads) */
    wick_tensor **grads; /* one per input while capturing */
    hook_plan hooks;
} backward_run;

static int input_index(const backward_run *r, const wick_tensor *leaf) {
    for (int k = 0; k < r->a->n_inputs; k++)
        if (r->a->inputs[k] == leaf) return k;
    return -1;
}

/* g (taken) arrives at a leaf: its .grad (or its hooks' sum), or the captured gradient. */
static wick_status deliver_leaf(backward_run *r, wick_tensor *leaf, wick_tensor *g) {
    if (r->capture) {
        int k = input_index(r, leaf);
        if (k < 0) return wick_tensor_release(g), WICK_OK;
        return accumulate(&r->grads[k], g);
    }
    hook_count *c = find_count(&r->hooks, leaf);
    return c ? accumulate(&c->grad, g) : accumulate_leaf(leaf, g);
}

/* A captured non-leaf input's gradient is its node's whole gradient, taken before the node runs. */
static wick_status capture_node(backward_run *r, const wk_node *n) {
    for (int k = 0; k < r->a->n_inputs; k++) {
        if (r->a->inputs[k]->grad_fn != n) continue;
        wick_tensor_retain(n->grad);
        wick_status st = accumulate(&r->grads[k], n->grad);
        if (st) return st;
    }
    return WICK_OK;
}

static bool is_input_node(const backward_run *r, const wk_node *n) {
    for (int k = 0; k < r->a->n_inputs; k++)
        if (r->a->inputs[k]->grad_fn == n) return true;
    return false;
}

/* While capturing, the nodes that lead to an input (the others need not run):
 * need[i] for order->items[i], whose `pending` becomes its index. */
static wick_status plan_needed(const backward_run *r, const node_list *order, bool **need) {
    *need = calloc((size_t)order->count + 1, sizeof **need);
    if (!*need) return wick_fail(WICK_ERR_OOM, "out of memory planning the backward");
    for (int i = 0; i < order->count; i++) {
        wk_node *n = order->items[i];
        n->pending = i;
        for (int j = 0; j < n->n_inputs && !(*need)[i]; j++) {
            const wk_edge *e = &n->edges[j];
            (*need)[i] = e->leaf ? input_index(r, e->leaf) >= 0
                                 : e->node && ((*need)[e->node->pending] || is_input_node(r, e->node));
        }
    }
    return WICK_OK;
}

/* The backward of a gradient that a fused kernel computed under create_graph. */
static wick_status no_double_backward(wk_node *n, wick_tensor *g, wick_tensor **grads) {
    (void)g, (void)grads;
    bool attention = strncmp(n->name, "ScaledDotProduct", 16) == 0;
    return wick_fail(WICK_ERR_UNSUPPORTED,
                     "%s: a gradient of a gradient through this op is not supported (its backward is a fused "
                     "kernel without a derivative); create_graph = true works through the ops written with "
                     "others (elementwise, matmul, linear, reductions, views, softmax, ...)%s",
                     n->name,
                     attention ? "; run the attention under wick.nn.attention.sdpa_kernel(SDPBackend.MATH, fn), "
                                 "as wick.func's transforms do, for its math form" : "");
}

/* create_graph through a node whose backward is a fused kernel: its
 * gradients depend on what the kernel read (the incoming gradient, saved
 * tensors that require grad) through a node that raises if differentiated. */
static wick_status guard_grads(const wk_node *n, const wick_tensor *g, wick_tensor **gs) {
    const wick_tensor *in[WK_MAX_SAVED + 1];
    int k = 0;
    if (g->requires_grad) in[k++] = g;
    for (int i = 0; i < WK_MAX_SAVED; i++)
        if (n->saved[i] && n->saved[i]->requires_grad) in[k++] = n->saved[i];
    for (int j = 0; k && j < n->n_inputs; j++) {
        wick_tensor *v, *t = gs[j];
        if (!t) continue;
        wick_status st = wk_tensor_view(&v, t, t->ndim, t->sizes, t->strides, t->offset); /* the kernel's may be shared */
        if (st) return st;
        wick_tensor_release(t);
        gs[j] = v;
        if ((st = wk_record(v, n->name, no_double_backward, 0, k, in, NULL))) return st;
    }
    return WICK_OK;
}

/* create_graph: the node's saved outputs are read through aliases whose
 * grad_fn is the node, so the new graph reaches its inputs through them. */
static wick_status attach_outputs(wk_node *n, wick_tensor **kept) {
    for (int i = 0; i < WK_MAX_SAVED; i++) {
        kept[i] = NULL;
        wick_tensor *s = n->saved[i], *v;
        if (!s || !(n->saved_output >> i & 1)) continue;
        wick_status st = wk_tensor_view(&v, s, s->ndim, s->sizes, s->strides, s->offset);
        if (st) return st;
        __atomic_add_fetch(&n->refcount, 1, __ATOMIC_RELAXED);
        v->grad_fn = n;
        v->requires_grad = true;
        kept[i] = s;
        n->saved[i] = v;
    }
    return WICK_OK;
}

static void detach_outputs(wk_node *n, wick_tensor **kept) {
    for (int i = 0; i < WK_MAX_SAVED; i++) {
        if (!kept[i]) continue;
        wick_tensor_release(n->saved[i]);
        n->saved[i] = kept[i];
    }
}

/* Anomaly detection (wick_set_detect_anomaly): each node's gradients are
 * checked for NaN as they come out, and the first one that has some is an
 * error naming the node, as PyTorch's detect_anomaly. Per thread. */
static _Thread_local int detect_anomaly;
void wick_set_detect_anomaly(int on) { detect_anomaly = on != 0; }
int wick_is_anomaly_enabled(void) { return detect_anomaly; }

static wick_status check_anomaly(const wk_node *n, wick_tensor **gs) {
    for (int j = 0; j < n->n_inputs; j++) {
        if (!gs[j] || !wick_dtype_is_floating(gs[j]->dtype) || wk_is_meta(gs[j])) continue;
        wick_tensor *nan = NULL, *any = NULL;
        wick_status st;
        WK_NO_GRAD(st = wick_binary(&nan, WICK_NE, gs[j], gs[j]); if (!st) st = wick_reduce(&any, NULL, WICK_SUM, nan, -1, 0, 0));
        double v = 0;
        if (!st) st = wick_item_double(any, &v);
        wick_tensor_release(nan);
        wick_tensor_release(any);
        if (st) return st;
        if (v != 0) return wick_fail(WICK_ERR_ARGUMENT, "Function '%s' returned nan values in its %dth output.", n->name, j);
    }
    return WICK_OK;
}

static wick_status call_backward(const backward_run *r, wk_node *n, wick_tensor **gs) {
    wick_status st;
    if (!r->a->create_graph) return n->backward(n, n->grad, gs);
    if (!n->twice) {
        WK_NO_GRAD(st = n->backward(n, n->grad, gs));
        return st ? st : guard_grads(n, n->grad, gs);
    }
    wick_tensor *kept[WK_MAX_SAVED];
    st = attach_outputs(n, kept);
    if (!st) st = n->backward(n, n->grad, gs);
    detach_outputs(n, kept);
    return st;
}

static wick_status released_error(const wk_node *n) {
    return wick_fail(WICK_ERR_ARGUMENT,
                     "Trying to backward through the graph a second time (or directly access saved tensors "
                     "after they have already been freed; node %s). Saved intermediate values of the graph are "
                     "freed when you call :backward(); specify {retain_graph = true} on the first backward to "
                     "backward through it again",
                     n->name);
}

/* Runs the nodes of `order` from the roots down; the roots' gradients are in place. */
static wick_status walk(backward_run *r, const node_list *order, const bool *need) {
    wick_autograd_hook hook = r->a->hook;
    wick_status st = WICK_OK;
    for (int i = order->count - 1; i >= 0 && !st; i--) {
        wk_node *n = order->items[i];
        /* a captured input's own hooks run first, on its whole gradient, as PyTorch's */
        bool hooked = false;
        if (n->grad && r->capture && is_input_node(r, n)) {
            if (hook && n->hook_id && (st = hook(r->a->ud, WICK_HOOK_GRAD, NULL, n->hook_id, &n->grad))) break;
            hooked = true;
            if ((st = capture_node(r, n))) break;
        }
        if (!n->grad || (need && !need[i])) { /* nothing flowed here, or it leads to no input */
            wick_tensor_release(n->grad);
            n->grad = NULL;
            if (!r->capture) st = settle_hooks(&r->hooks, n);
            continue;
        }
        if (n->released) {
            st = released_error(n);
            break;
        }
        if (hook && n->hook_id && !hooked && (st = hook(r->a->ud, WICK_HOOK_GRAD, NULL, n->hook_id, &n->grad))) break;
        if (hook && n->retain_id && (st = hook(r->a->ud, WICK_HOOK_RETAIN, NULL, n->retain_id, &n->grad))) break;
        int64_t event = wick_profiling ? profile_node(n) : -1; /* the profiler's event for the node */
        wick_tensor *grads[64] = {0}, **gs = grads;
        if (n->n_inputs > 64 && !(gs = calloc((size_t)n->n_inputs, sizeof *gs))) {
            st = wick_fail(WICK_ERR_OOM, "out of memory in backward");
            wick_profiler_end(event);
            break;
        }
        if (n->frame || n->recomputed) st = frame_unpack(r->a, n);
        if (!st) st = check_saved_versions(n);
        bool done = !st && !r->a->create_graph && !r->capture && n->n_inputs == 1 && n->edges[0].node &&
                    wk_slice_backward_into(n, n->grad, n->edges[0].node->grad, &st);
        if (!st && !done) st = call_backward(r, n, gs);
        if (!st && !done && detect_anomaly) st = check_anomaly(n, gs);
        wick_tensor_release(n->grad);
        n->grad = NULL;
        for (int j = 0; j < n->n_inputs; j++) {
            wk_edge *e = &n->edges[j];
            wick_tensor *g = gs[j];
            gs[j] = NULL;
            if (!g) continue;
            if (st || (!e->node && !e->leaf) || (st = fit_to_edge(&g, e))) {
                wick_tensor_release(g);
                continue;
            }
            st = e->node ? accumulate(&e->node->grad, g) : deliver_leaf(r, e->leaf, g);
        }
        if (gs != grads) free(gs);
        wick_profiler_end(event);
        if (!st && !r->capture) st = settle_hooks(&r->hooks, n);
        if (!r->a->retain_graph && release_saved(n)) n->released = true;
    }
    for (int i = 0; i < order->count; i++) { /* after an error, drop what is still pending */
        wick_tensor_release(order->items[i]->grad);
        order->items[i]->grad = NULL;
    }
    return st;
}

/* Seeds the roots (taking the seeds' references) and runs the graph under them. */
static wick_status run_backward(backward_run *r, wick_tensor **seeds) {
    const wick_backward_args *a = r->a;
    wick_status st = WICK_OK;
    wk_node *stack_roots[8] = {0}, **roots = stack_roots;
    if (a->n_outputs > 8 && !(roots = calloc((size_t)a->n_outputs, sizeof *roots)))
        st = wick_fail(WICK_ERR_OOM, "out of memory in backward");
    for (int i = 0; i < a->n_outputs && roots && !st; i++) {
        roots[i] = a->outputs[i]->grad_fn;
        if (roots[i] && roots[i]->released) st = released_error(roots[i]);
    }
    for (int i = 0; i < a->n_outputs; i++) { /* the seeds go to the roots' nodes, or to leaves */
        wick_tensor *g = seeds[i], *t = a->outputs[i];
        seeds[i] = NULL;
        if (st) wick_tensor_release(g);
        else if (t->grad_fn) st = accumulate(&t->grad_fn->grad, g);
        else if (!r->capture && a->hook && __atomic_load_n(&t->hook_id, __ATOMIC_RELAXED))
            st = finish_leaf(a->hook, a->ud, t, g);
        else st = deliver_leaf(r, t, g);
    }
    node_list order = {0};
    bool *need = NULL;
    if (!st) st = topo_order(a->n_outputs, roots, &order);
    if (!st) order_by_creation(&order);
    if (!st && r->capture) st = plan_needed(r, &order, &need);
    if (!st && !r->capture) {
        r->hooks = (hook_plan){a->hook, a->ud, NULL, 0};
        st = plan_hooks(&r->hooks, &order);
    }
    if (!st) st = walk(r, &order, need);
    for (int i = 0; i < a->n_outputs; i++) { /* seeds of roots that never ran (an error) */
        if (!roots || !roots[i]) continue;
        wick_tensor_release(roots[i]->grad);
        roots[i]->grad = NULL;
    }
    if (roots != stack_roots) free(roots);
    free(order.items);
    free(need);
    free_plan(&r->hooks);
    return st;
}


wick_status wick_backward(wick_tensor *t, const wick_tensor *gradient, int retain_graph) {
    return wick_backward_ex(t, gradient, retain_graph, NULL, NULL);
}

/* The seed of output i: ones for a one-element output without a gradient, else the gradient as the output's. */
static wick_status make_seed(wick_tensor **seed, const wick_tensor *t, const wick_tensor *gradient, int i, int n) {
    char a[WK_SHAPE_BUF], b[WK_SHAPE_BUF];
    wick_status st;
    if (!gradient) {
        if (wick_tensor_numel(t) != 1)
            return wick_fail(WICK_ERR_SHAPE,
                             "grad can be implicitly created only for scalar outputs (%s%shas shape %s); pass a "
                             "gradient: t:backward(gradient), or autograd.grad's grad_outputs",
                             n > 1 ? "output " : "this one ", n > 1 ? (snprintf(b, sizeof b, "%d ", i + 1), b) : "",
                             wk_shape_str(t->ndim, t->sizes, a, sizeof a));
        WK_NO_GRAD(st = wick_full(seed, t->ndim, t->sizes, 1, (wick_options){t->dtype, t->storage->device}));
        return st;
    }
    if (gradient->ndim != t->ndim || memcmp(gradient->sizes, t->sizes, sizeof(int64_t) * t->ndim) != 0)
        return wick_fail(WICK_ERR_SHAPE, "backward: gradient has shape %s, but the tensor has shape %s",
                         wk_shape_str(gradient->ndim, gradient->sizes, a, sizeof a),
                         wk_shape_str(t->ndim, t->sizes, b, sizeof b));
    if (gradient->dtype == t->dtype && wick_device_equal(gradient->storage->device, t->storage->device)) {
        wick_tensor_retain((wick_tensor *)gradient); /* as it is: under create_graph, its graph too */
        *seed = (wick_tensor *)gradient;
        return WICK_OK;
    }
    return wick_to(seed, (wick_tensor *)gradient, (wick_options){t->dtype, t->storage->device});
}

static wick_status check_args(const wick_backward_args *a) {
    if (!a || a->n_outputs < 1 || !a->outputs || a->n_inputs < 0 || (a->n_inputs && !a->inputs))
        return wick_fail(WICK_ERR_ARGUMENT, "backward: no outputs to differentiate (or a NULL argument)");
    for (int i = 0; i < a->n_outputs; i++) {
        if (!a->outputs[i]) return wick_fail(WICK_ERR_ARGUMENT, "backward: output %d is NULL", i + 1);
        wick_status st = wk_refresh_view(a->outputs[i]);
        if (st) return st;
        if (!a->outputs[i]->requires_grad)
            return wick_fail(WICK_ERR_ARGUMENT,
                             "element %d of tensors does not require grad and does not have a grad_fn (set "
                             "requires_grad = true on the inputs, outside wick.no_grad)",
                             i);
    }
    for (int k = 0; k < a->n_inputs; k++) {
        if (!a->inputs[k]) return wick_fail(WICK_ERR_ARGUMENT, "backward: input %d is NULL", k + 1);
        if (!a->inputs[k]->requires_grad)
            return wick_fail(WICK_ERR_ARGUMENT,
                             "One of the differentiated Tensors does not require grad (input %d: set "
                             "requires_grad = true on it before the forward)",
                             k + 1);
    }
    return WICK_OK;
}

wick_status wick_backward_run(const wick_backward_args *a) {
    wick_status st = check_args(a);
    if (st) return st;
    backward_run r = {a, a->n_inputs > 0, a->grads, {0}};
    wick_tensor *seed_buf[8] = {0}, **seeds = seed_buf, **own = NULL;
    if (a->n_outputs > 8 && !(seeds = calloc((size_t)a->n_outputs, sizeof *seeds)))
        return wick_fail(WICK_ERR_OOM, "out of memory in backward");
    if (r.capture && !a->grads && !(r.grads = own = calloc((size_t)a->n_inputs, sizeof *own)))
        st = wick_fail(WICK_ERR_OOM, "out of memory in backward");
    for (int k = 0; r.capture && a->grads && k < a->n_inputs; k++) a->grads[k] = NULL;
    for (int i = 0; i < a->n_outputs && !st; i++)
        st = make_seed(&seeds[i], a->outputs[i], a->gradients ? a->gradients[i] : NULL, i, a->n_outputs);
    if (st) {
        for (int i = 0; i < a->n_outputs; i++) wick_tensor_release(seeds[i]);
    } else {
        wick_autograd_hook outer = wk_backward_hook; /* a hook's own backward nests */
        void *outer_ud = wk_backward_hook_ud;
        int mode = wk_grad_mode;
        wk_backward_hook = a->hook, wk_backward_hook_ud = a->ud;
        wk_grad_mode = a->create_graph != 0;
        st = run_backward(&r, seeds);
        /* autograd.grad's leaf inputs: their grad hooks on the whole gradient, as PyTorch's (no
         * accumulation, so no post-accumulate hook); backward(inputs = ...)'s run in finish_leaf below */
        for (int k = 0; !st && r.capture && !own && a->hook && k < a->n_inputs; k++) {
            const wick_tensor *leaf = a->inputs[k];
            int64_t id = leaf->grad_fn ? 0 : __atomic_load_n(&leaf->hook_id, __ATOMIC_RELAXED);
            if (id && r.grads[k]) st = a->hook(a->ud, WICK_HOOK_GRAD, (wick_tensor *)leaf, id, &r.grads[k]);
        }
        wk_grad_mode = mode;
        wk_backward_hook = outer, wk_backward_hook_ud = outer_ud;
    }
    if (seeds != seed_buf) free(seeds);
    for (int k = 0; own && k < a->n_inputs; k++) { /* backward(inputs = ...): into their .grad */
        wick_tensor *g = own[k], *t = a->inputs[k];
        if (g && !st && a->hook && !t->grad_fn && __atomic_load_n(&t->hook_id, __ATOMIC_RELAXED))
            st = finish_leaf(a->hook, a->ud, t, g); /* a leaf's hooks, then .grad (takes g) */
        else if (g && !st) st = accumulate_leaf(t, g); /* takes g */
        else wick_tensor_release(g);
    }
    free(own);
    for (int k = 0; st && a->grads && k < a->n_inputs; k++) { /* autograd.grad: nothing half done */
        wick_tensor_release(a->grads[k]);
        a->grads[k] = NULL;
    }
    return st;
}

wick_status wick_backward_ex(wick_tensor *t, const wick_tensor *gradient, int retain_graph, wick_autograd_hook hook,
                             void *ud) {
    wick_backward_args a = {.n_outputs = 1, .outputs = &t, .gradients = &gradient, .retain_graph = retain_graph,
                            .hook = hook, .ud = ud};
    return wick_backward_run(&a);
}
