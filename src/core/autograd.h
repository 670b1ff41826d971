/* Reverse-mode automatic differentiation: the graph nodes that ops record and
 * the engine that walks them backwards. Internal to the core. */
#ifndef WICK_AUTOGRAD_H
#define WICK_AUTOGRAD_H

#include "internal.h"

#include <pthread.h>

typedef struct wk_node wk_node;

/* Computes the gradients of a node's inputs from the gradient of its output.
 * grads[i] may be left NULL for inputs that need none. The engine then gives each
 * gradient its input's shape (summing broadcast dims), dtype and device. */
typedef wick_status (*wk_backward_fn)(wk_node *node, wick_tensor *grad, wick_tensor **grads);

/* Where the gradient of one input goes, and what the input looked like. */
typedef struct wk_edge {
    wk_node *node;     /* the node that produced the input, or NULL */
    wick_tensor *leaf; /* or the leaf tensor that accumulates .grad, or NULL */
    wick_dtype dtype;
    wick_device device;
    int ndim;
    int64_t sizes[WICK_MAX_DIMS];
} wk_edge;

#define WK_MAX_SAVED 8
struct wk_node {
    int refcount;
    const char *name; /* "MulBackward", shown as t.grad_fn */
    wk_backward_fn backward;
    int op;           /* which op of a family (wick_binary_op, ...) */
    int n_inputs;
    wk_edge *edges;
    wick_tensor *saved[WK_MAX_SAVED];
    unsigned saved_version[WK_MAX_SAVED]; /* each saved tensor's storage version when saved */
    double scalars[4];
    int ints[WICK_MAX_DIMS + 4];
    int64_t sizes[WICK_MAX_DIMS]; /* an extra shape (e.g. the input of a view) */
    int ndim;
    bool released; /* saved tensors freed after a backward without retain_graph */
    bool twice;    /* its backward is written with recorded ops: differentiable under create_graph */
    unsigned char saved_output; /* bit i: saved[i] is an alias of the node's own output */
    int64_t hook_id; /* the hooks of the tensor this node made (wick_hook_id); 0: none */
    int64_t retain_id; /* the tensor whose current history this node is retains its grad
                          (wick_retain_grad_id): moved to the new node by an in-place op */
    uint64_t seq;    /* creation order: backward runs the latest first, as PyTorch's engine */
    struct wk_frame *frame;          /* the checkpoint whose recomputation gives saved tensors (autograd.c) */
    int frame_slot[WK_MAX_SAVED];    /* saved[i] is that recomputation's tensor frame_slot[i] (1-based; 0: none) */
    bool recomputed;                 /* its saved tensors came from a checkpoint's recomputation (no history) */
    /* engine scratch */
    wick_tensor *grad;
    int pending;
    int mark;
    int reach_mark; /* wick_graph_reaches_other_leaf's own, apart from the engine's */
};

/* Grad mode is per thread (a Lua state runs on one thread at a time). */
extern _Thread_local int wk_grad_mode;
#define WK_NO_GRAD(expr)                                                                          \
    do {                                                                                          \
        int wk_prev_mode_ = wk_grad_mode;                                                         \
        wk_grad_mode = 0;                                                                         \
        expr;                                                                                     \
        wk_grad_mode = wk_prev_mode_;                                                             \
    } while (0)

/* True when grad mode is on and an input requires grad: the op must record. */
bool wk_wants_grad(int n, const wick_tensor *const *inputs);
/* Creates a node for `out` with edges to `inputs` (NULL entries are skipped) and
 * makes it out's grad_fn. On failure `out` is left without grad_fn. */
wick_status wk_record(wick_tensor *out, const char *name, wk_backward_fn fn, int op, int n,
                      const wick_tensor *const *inputs, wk_node **node);
/* Saves a tensor for backward; `out` itself is saved as a detached alias so the
 * node does not keep its own output alive. */
wick_status wk_save(wk_node *node, int slot, const wick_tensor *t, const wick_tensor *out);
/* The checks of an in-place op on `target` with operands `inputs`; bumps the
 * target's version (see wk_bump_version). When autograd must see the op,
 * `record` non-NULL says the op can be recorded: *record becomes true, and the
 * op computes its result out of place, recording, then calls wk_adopt_inplace.
 * Without `record`, or on a leaf that requires grad (or a view of one), or
 * when other tensors share the target's storage (a view's base aside), it
 * fails. */
wick_status wk_check_inplace(const char *op, const wick_tensor *target, int n, const wick_tensor *const *inputs,
                             bool *record);
/* Writes `result` (same shape, a castable dtype) into `target`, which takes over
 * result's autograd node; saved copies of target's old values are kept. A
 * view written so (one whose base is the only other tensor on the storage)
 * rewrites its base's history instead, as PyTorch's CopySlices: the base's
 * node takes the old base and `result`, and the view becomes a view of it. */
wick_status wk_adopt_inplace(wick_tensor *target, wick_tensor *result);
/* Notes that `v` is a view of `t` (in grad mode: what an in-place write into
 * v rewrites, see wk_adopt_inplace). */
void wk_note_view_base(wick_tensor *v, const wick_tensor *t);
/* A view whose storage was written since its history was made gets its
 * history again, as a view of its base's current one (PyTorch regenerates a
 * view's grad_fn so): every place that reads a tensor's requires_grad or
 * grad_fn to build the graph calls this first. */
wick_status wk_refresh_view(const wick_tensor *t);

void wk_node_release(wk_node *n);
/* *out = r once recording succeeded; on failure r is freed and *out untouched. */
wick_status wk_publish(wick_tensor **out, wick_tensor *r, wick_status record_status);

/* Reduces `grad` to `ndim/sizes` by summing broadcast dims. */
wick_status wk_sum_to(wick_tensor **out, wick_tensor *grad, int ndim, const int64_t *sizes);

/* Record helpers per op family (derivatives.c): each is called after a
 * successful forward when wk_wants_grad() said so. */
wick_status wk_record_unary(wick_tensor *out, wick_unary_op op, const wick_tensor *a);
wick_status wk_record_binary(wick_tensor *out, wick_binary_op op, const wick_tensor *a, const wick_tensor *b,
                             double alpha);
wick_status wk_record_clamp(wick_tensor *out, const wick_tensor *a, double lo, double hi, bool hardtanh);
wick_status wk_record_where(wick_tensor *out, const wick_tensor *cond, const wick_tensor *a, const wick_tensor *b);
wick_status wk_record_reduce(wick_tensor *out, const wick_tensor *indices, wick_reduce_op op, const wick_tensor *a,
                             int dim, int keepdim, int correction);
wick_status wk_record_addmm(wick_tensor *out, const wick_tensor *input, const wick_tensor *m1, const wick_tensor *m2,
                            double beta, double alpha);
wick_status wk_record_linear(wick_tensor *out, const wick_tensor *x, const wick_tensor *weight, const wick_tensor *bias);
wick_status wk_record_mse(wick_tensor *out, const wick_tensor *input, const wick_tensor *target,
                          const wick_tensor *diff, int reduction);
wick_status wk_record_bmm(wick_tensor *out, const wick_tensor *a, const wick_tensor *b);
/* views: kind is one of the WK_VIEW_* below; dims and start/length as needed */
enum { WK_VIEW_RESHAPE, WK_VIEW_TRANSPOSE, WK_VIEW_PERMUTE, WK_VIEW_EXPAND, WK_VIEW_SLICE, WK_VIEW_SELECT,
       WK_VIEW_IDENTITY };
/* True when nothing but the engine can see t (one reference to it and its
 * storage, no autograd, contiguous from offset 0): the engine may add into it in place. */
bool wk_engine_owned(const wick_tensor *t);
/* When n is a slice or select of a view and `acc`, the gradient its input has
 * gathered so far, is the engine's own (nothing else holds it, contiguous, of
 * the input's shape and g's dtype): adds g into acc's slice in place and returns
 * true (*st: the result), sparing a zeros tensor of the input's shape and a full add.
 * False when any of that does not hold (the engine runs n's backward then). */
/* g (shaped like the slice) at [start, ...) of dim in zeros of the input's `sizes`, with recorded ops
 * (the backward of a slice under create_graph). */
wick_status wk_pad_slice(wick_tensor **out, const wick_tensor *g, int ndim, const int64_t *sizes, int dim,
                         int64_t start);
/* the same for a slice of any step (index_add where step > 1: differentiable again) */
wick_status wk_pad_slice_step(wick_tensor **out, const wick_tensor *g, int ndim, const int64_t *sizes, int dim,
                              int64_t start, int64_t step);
bool wk_slice_backward_into(wk_node *n, wick_tensor *g, wick_tensor *acc, wick_status *st);
wick_status wk_record_view(wick_tensor *out, const wick_tensor *in, int kind, int dim0, int dim1, int64_t start,
                           int64_t length, const int *perm);
/* A copy (clone, a dtype or device change) recorded as the identity, under
 * PyTorch's node name for it (CloneBackward, ToCopyBackward). */
wick_status wk_record_copy(wick_tensor *out, const wick_tensor *in, const char *name);
wick_status wk_record_index_select(wick_tensor *out, const wick_tensor *a, int dim, const wick_tensor *index);
wick_status wk_record_gather(wick_tensor *out, const wick_tensor *a, int dim, const wick_tensor *index);
wick_status wk_record_cat(wick_tensor *out, int count, const wick_tensor *const *ts, int dim);
wick_status wk_record_softmax(wick_tensor *out, const wick_tensor *a, int dim, int log);
/* Fused backwards (nn_ops.c), in the compute dtype; wk_softmax_backward leaves
 * *out NULL when the backend has no fused kernel. */
wick_status wk_act_backward(wick_tensor **out, const wick_tensor *g, const wick_tensor *x, int form);
wick_status wk_softmax_backward(wick_tensor **out, const wick_tensor *g, const wick_tensor *y, int dim, int log);

/* Custom functions (function.c): the backward of wick_function_record's nodes,
 * the hook the running backward was started with (run_backward sets it on its
 * thread; NULL: none), and the note that a custom node is gone. */
wick_status wk_function_backward(wk_node *n, wick_tensor *grad, wick_tensor **grads);
extern _Thread_local wick_autograd_hook wk_backward_hook;
extern _Thread_local void *wk_backward_hook_ud;
void wk_function_forget(const wk_node *n);

/* Ids the host keeps state for (custom nodes' closures, hooks), queued by the
 * core when nothing uses them any more; the host takes them from any thread.
 * Out of memory, an id is dropped: the host keeps its state until it exits. */
typedef struct wk_id_queue {
    pthread_mutex_t lock;
    int64_t *ids;
    size_t n, cap;
} wk_id_queue;
#define WK_ID_QUEUE_INIT {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0}
void wk_id_queue_push(wk_id_queue *q, int64_t id);
int wk_id_queue_take(wk_id_queue *q, int64_t *ids, int max);
/* t is being freed: its hook id, if no node keeps it, is released. */
void wk_hook_forget(const wick_tensor *t);

#endif
