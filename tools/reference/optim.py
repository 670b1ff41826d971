"""Optimizers and learning-rate schedulers: the parameters after each step of
every optimizer configuration on one fixed problem, and the learning rates
(and momenta) after each step of every scheduler configuration.

The fixture describes each case (class name, options) so that
spec/optim_shelf_spec.lua builds the same objects from it; the few Python
lambdas a scheduler needs are named (LAMBDAS) and the spec has the same table.
"""
import math
import warnings

import torch

from reference.common import formula, inputs, write_lua

NAME = "optim"
STEPS = 8        # steps of each optimizer configuration
LBFGS_STEPS = 3  # LBFGS steps (each up to max_iter iterations)


def problem(dtype=torch.float64):
    """w [3, 4], b [3]; loss = mean((tanh(x w^T + b) - y)^2) on 5 samples."""
    w = formula([3, 4], 0, dtype).requires_grad_()
    b = formula([3], 1, dtype).requires_grad_()
    x = inputs([5, 4], dtype)
    y = formula([5, 3], 2, dtype)

    def loss_fn():
        return (torch.tanh(x @ w.t() + b) - y).pow(2).mean()
    return w, b, loss_fn


OPTIMIZERS = [
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01}),
    ("Adam", {"lr": 0.05, "amsgrad": True}),
    ("AdamW", {"lr": 0.05, "weight_decay": 0.1}),
    ("Adadelta", {}),
    ("Adadelta", {"lr": 0.5, "rho": 0.8, "eps": 1e-4, "weight_decay": 0.1, "maximize": True}),
    ("RMSprop", {}),
    ("RMSprop", {"lr": 0.01, "alpha": 0.9, "eps": 1e-6, "weight_decay": 0.1}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.9}),
    ("RMSprop", {"lr": 0.01, "centered": True}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.5, "centered": True, "weight_decay": 0.05}),
    ("RMSprop", {"lr": 0.01, "maximize": True}),
    ("Adagrad", {}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.1}),
    ("Adagrad", {"lr": 0.1, "initial_accumulator_value": 0.5, "weight_decay": 0.1}),
    ("Adagrad", {"lr": 0.1, "eps": 1e-3, "maximize": True}),
    ("Adamax", {}),
    ("Adamax", {"lr": 0.1, "betas": [0.8, 0.99], "eps": 1e-4, "weight_decay": 0.1}),
    ("Adamax", {"lr": 0.05, "maximize": True}),
    ("NAdam", {}),
    ("NAdam", {"lr": 0.1, "momentum_decay": 0.01, "betas": [0.8, 0.99]}),
    ("NAdam", {"lr": 0.1, "weight_decay": 0.1}),
    ("NAdam", {"lr": 0.1, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("RAdam", {}),
    ("RAdam", {"lr": 0.1, "weight_decay": 0.1}),
    ("RAdam", {"lr": 0.1, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("RAdam", {"lr": 0.1, "betas": [0.8, 0.9], "eps": 1e-4, "maximize": True}),
    ("Rprop", {}),
    ("Rprop", {"lr": 0.05, "etas": [0.3, 1.5], "step_sizes": [1e-3, 0.2]}),
    ("Rprop", {"lr": 0.02, "maximize": True}),
    ("ASGD", {}),
    ("ASGD", {"lr": 0.1, "lambd": 0.01, "alpha": 0.5, "t0": 2, "weight_decay": 0.1}),
    ("LBFGS", {}),
    ("LBFGS", {"lr": 0.5, "max_iter": 5, "history_size": 3}),
    ("LBFGS", {"line_search_fn": "strong_wolfe"}),
    ("LBFGS", {"line_search_fn": "strong_wolfe", "max_iter": 6, "history_size": 2, "tolerance_change": 1e-6}),
    ("LBFGS", {"lr": 0.1, "max_iter": 4, "max_eval": 3, "maximize": True}),
]


def case_name(cls, opts):
    return "%s(%s)" % (cls, ", ".join("%s = %s" % (k, v) for k, v in opts.items()))


def optimizer_case(cls, opts):
    w, b, loss_fn = problem()
    kwargs = {k: tuple(v) if isinstance(v, list) else v for k, v in opts.items()}
    opt = getattr(torch.optim, cls)([w, b], **kwargs)

    def closure():
        opt.zero_grad()
        loss = loss_fn()
        loss.backward()
        return loss
    steps = []
    for _ in range(LBFGS_STEPS if cls == "LBFGS" else STEPS):
        loss = opt.step(closure)
        rec = {"w": w.detach().clone(), "b": b.detach().clone(), "loss": float(loss)}
        if cls == "LBFGS":
            st = opt.state[w]
            rec["func_evals"], rec["n_iter"] = st["func_evals"], st["n_iter"]
        if cls == "ASGD":
            rec["ax"] = opt.state[w]["ax"].clone()  # the average
        steps.append(rec)
    return {"optimizer": cls, "options": opts, "steps": steps}


# the lambdas a scheduler case names (the spec has the same table)
LAMBDAS = {
    "pow95": lambda e: 0.95 ** e,
    "inv": lambda e: 1.0 / (e + 1),
    "const9": lambda e: 0.9,
    "half": lambda x: 0.5 ** x,
}

SGD_GROUPS = ("SGD", {"lr": 1.0, "momentum": 0.9}, None)
TWO_GROUPS = ("SGD", {"lr": 1.0, "momentum": 0.9}, [{"lr": 1.0}, {"lr": 0.5}])
ADAM = ("Adam", {"lr": 1.0}, None)


def S(name, **opts):
    return {"name": name, "options": opts}


SCHEDULERS = [
    ("StepLR", SGD_GROUPS, S("StepLR", step_size=3, gamma=0.5), 10),
    ("StepLR, two groups", TWO_GROUPS, S("StepLR", step_size=2, gamma=0.1), 6),
    ("MultiStepLR with a repeated milestone", SGD_GROUPS, S("MultiStepLR", milestones=[2, 5, 5, 8], gamma=0.3), 10),
    ("ExponentialLR", SGD_GROUPS, S("ExponentialLR", gamma=0.9), 8),
    ("CosineAnnealingLR past T_max", TWO_GROUPS, S("CosineAnnealingLR", T_max=4, eta_min=0.1), 12),
    ("LambdaLR", SGD_GROUPS, S("LambdaLR", lr_lambda="pow95"), 6),
    ("LambdaLR, one per group", TWO_GROUPS, S("LambdaLR", lr_lambda=["pow95", "inv"]), 6),
    ("MultiplicativeLR", SGD_GROUPS, S("MultiplicativeLR", lr_lambda="const9"), 6),
    ("ConstantLR defaults", SGD_GROUPS, S("ConstantLR"), 8),
    ("ConstantLR", TWO_GROUPS, S("ConstantLR", factor=0.5, total_iters=3), 6),
    ("LinearLR defaults", SGD_GROUPS, S("LinearLR"), 8),
    ("LinearLR down", TWO_GROUPS, S("LinearLR", start_factor=0.5, end_factor=0.1, total_iters=4), 7),
    ("PolynomialLR", SGD_GROUPS, S("PolynomialLR", total_iters=6, power=2.0), 8),
    ("OneCycleLR cos, SGD momentum", SGD_GROUPS, S("OneCycleLR", max_lr=1.0, total_steps=10), 10),
    ("OneCycleLR linear", SGD_GROUPS, S("OneCycleLR", max_lr=0.5, total_steps=12, anneal_strategy="linear",
                                          pct_start=0.25, div_factor=10.0, final_div_factor=100.0), 12),
    ("OneCycleLR three_phase", SGD_GROUPS, S("OneCycleLR", max_lr=2.0, total_steps=20, three_phase=True,
                                               base_momentum=0.8, max_momentum=0.9), 20),
    ("OneCycleLR Adam betas, epochs", ADAM, S("OneCycleLR", max_lr=0.1, epochs=2, steps_per_epoch=5), 10),
    ("OneCycleLR two groups, no momentum cycle", TWO_GROUPS, S("OneCycleLR", max_lr=[1.0, 0.2], total_steps=8,
                                                                 cycle_momentum=False), 8),
    ("CyclicLR triangular", SGD_GROUPS, S("CyclicLR", base_lr=0.1, max_lr=1.0, step_size_up=3), 14),
    ("CyclicLR triangular2, step_size_down", TWO_GROUPS,
     S("CyclicLR", base_lr=[0.1, 0.05], max_lr=[1.0, 0.5], step_size_up=2, step_size_down=4, mode="triangular2",
       base_momentum=[0.8, 0.7], max_momentum=0.9), 20),
    ("CyclicLR exp_range, Adam betas", ADAM, S("CyclicLR", base_lr=0.01, max_lr=0.1, step_size_up=2, mode="exp_range",
                                                gamma=0.9), 12),
    ("CyclicLR scale_fn by iterations, no momentum cycle", SGD_GROUPS,
     S("CyclicLR", base_lr=0.2, max_lr=0.6, step_size_up=2, scale_fn="half", scale_mode="iterations",
       cycle_momentum=False), 8),
    ("CosineAnnealingWarmRestarts T_mult 2", SGD_GROUPS,
     S("CosineAnnealingWarmRestarts", T_0=3, T_mult=2, eta_min=0.01), 15),
    ("CosineAnnealingWarmRestarts T_mult 1", TWO_GROUPS, S("CosineAnnealingWarmRestarts", T_0=4), 10),
    ("SequentialLR warmup then decay", SGD_GROUPS,
     {"name": "SequentialLR", "schedulers": [S("LinearLR", start_factor=0.1, total_iters=3),
                                             S("ExponentialLR", gamma=0.9)], "milestones": [3]}, 8),
    ("SequentialLR three schedulers", TWO_GROUPS,
     {"name": "SequentialLR", "schedulers": [S("ConstantLR", factor=0.5, total_iters=2),
                                             S("CosineAnnealingLR", T_max=5),
                                             S("StepLR", step_size=2, gamma=0.5)], "milestones": [3, 8]}, 12),
    ("ChainedScheduler", SGD_GROUPS,
     {"name": "ChainedScheduler", "schedulers": [S("ConstantLR", factor=0.1, total_iters=2),
                                                 S("ExponentialLR", gamma=0.9)]}, 6),
    ("ChainedScheduler warmup and cosine", TWO_GROUPS,
     {"name": "ChainedScheduler", "schedulers": [S("LinearLR", start_factor=0.2, total_iters=3),
                                                 S("CosineAnnealingLR", T_max=6, eta_min=0.05)]}, 8),
]

# step(epoch) with fractional epochs
EPOCH_CASES = [
    ("CosineAnnealingWarmRestarts step(epoch) T_mult 2", SGD_GROUPS,
     S("CosineAnnealingWarmRestarts", T_0=3, T_mult=2, eta_min=0.01),
     [0.5, 1.0, 1.7, 3.0, 4.2, 8.9, 9.0, 9.5, 21.3, 2.0, 45.0]),
    ("CosineAnnealingWarmRestarts step(epoch) T_mult 1", SGD_GROUPS,
     S("CosineAnnealingWarmRestarts", T_0=4, eta_min=0.1), [0.25, 3.5, 4.0, 7.75, 13.1]),
]

PLATEAU_CASES = [
    ("ReduceLROnPlateau min", SGD_GROUPS, S("ReduceLROnPlateau", patience=1),
     [5, 4, 4, 4, 4, 4, 3, 3.9999, 3.99999, 3, 3, 3]),
    ("ReduceLROnPlateau max abs cooldown", TWO_GROUPS,
     S("ReduceLROnPlateau", mode="max", factor=0.5, patience=0, threshold=0.1, threshold_mode="abs", cooldown=1,
       min_lr=[0.2, 0.01]),
     [1, 1.05, 1.2, 1.2, 1.2, 1.5, 1.5, 1.5, 1.5, 1.5]),
]


def make_optimizer(spec):
    cls, opts, groups = spec
    params = [torch.zeros(2, dtype=torch.float64, requires_grad=True),
              torch.zeros(3, dtype=torch.float64, requires_grad=True)]
    if groups:
        return getattr(torch.optim, cls)([dict(g, params=[p]) for g, p in zip(groups, params)], **opts)
    return getattr(torch.optim, cls)(params, **opts)


def make_scheduler(opt, s):
    L = torch.optim.lr_scheduler
    if s["name"] == "SequentialLR":
        subs = [make_scheduler(opt, x) for x in s["schedulers"]]
        return L.SequentialLR(opt, subs, milestones=s["milestones"])
    if s["name"] == "ChainedScheduler":
        return L.ChainedScheduler([make_scheduler(opt, x) for x in s["schedulers"]])
    opts = dict(s["options"])
    for key in ("lr_lambda", "scale_fn"):
        if key in opts:
            f = opts[key]
            opts[key] = [LAMBDAS[n] for n in f] if isinstance(f, list) else LAMBDAS[f]
    return getattr(L, s["name"])(opt, **opts)


def momenta(opt):
    out = []
    for g in opt.param_groups:
        out.append(g["betas"][0] if "betas" in g else g.get("momentum", 0))
    return out


def scheduler_case(opt_spec, sched_spec, steps=None, epochs=None, metrics=None):
    opt = make_optimizer(opt_spec)
    sched = make_scheduler(opt, sched_spec)
    lrs, moms = [list(sched.get_last_lr())], [momenta(opt)]
    for i in range(len(epochs) if epochs else len(metrics) if metrics else steps):
        opt.step()
        if epochs:
            sched.step(epochs[i])
        elif metrics:
            sched.step(metrics[i])
        else:
            sched.step()
        lrs.append(list(sched.get_last_lr()))
        moms.append(momenta(opt))
        assert lrs[-1] == [g["lr"] for g in opt.param_groups]
    cls, opts, groups = opt_spec
    case = {"optimizer": cls, "options": opts, "scheduler": sched_spec, "lrs": lrs, "momenta": moms}
    if groups:
        case["groups"] = groups
    if epochs:
        case["epochs"] = epochs
    elif metrics:
        case["metrics"] = metrics
    else:
        case["steps"] = steps
    return case


def write(out_dir):
    torch.set_default_dtype(torch.float64)  # the optimizers' scalar state (NAdam's mu_product) in float64
    warnings.simplefilter("ignore")
    optimizers = {}
    for cls, opts in OPTIMIZERS:
        optimizers[case_name(cls, opts)] = optimizer_case(cls, opts)
    schedulers = {}
    for name, o, s, n in SCHEDULERS:
        schedulers[name] = scheduler_case(o, s, steps=n)
    for name, o, s, e in EPOCH_CASES:
        schedulers[name] = scheduler_case(o, s, epochs=e)
    for name, o, s, m in PLATEAU_CASES:
        schedulers[name] = scheduler_case(o, s, metrics=m)
    torch.set_default_dtype(torch.float32)
    doc = ("optimizers: w, b after each step on loss = mean((tanh(x w^T + b) - y)^2), float64; "
           "schedulers: get_last_lr() and momentum/beta1 after construction and each step")
    return write_lua(out_dir, NAME, {"optimizers": optimizers, "schedulers": schedulers}, doc)
