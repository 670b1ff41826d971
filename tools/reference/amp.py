"""torch.amp.GradScaler on the CPU: the scale, the growth tracker, the
unscaled gradients and the parameters after each step of a fixed sequence in
which some steps' gradients are made inf or NaN (the step is skipped and the
scale backs off), and clean steps in a row grow the scale.

spec/grad_scaler_spec.lua repeats the sequence (the same problem, the same
injected steps) with wick.amp.GradScaler("cpu", ...)."""
import math
import warnings

import torch

from reference.common import formula, inputs, write_lua

NAME = "amp"
STEPS = 8
# step (1-based) -> what the gradient of w[1][1] becomes after backward
INJECT = {3: math.inf, 6: math.nan}
# steps on which the spec calls scaler:unscale_(opt) itself before step
UNSCALE_FIRST = {2, 6}

CASES = [
    ("defaults/growth_interval=2", {"init_scale": 65536.0, "growth_interval": 2}),
    ("init_scale=1000, growth_factor=1.5, backoff_factor=0.3, growth_interval=3",
     {"init_scale": 1000.0, "growth_factor": 1.5, "backoff_factor": 0.3, "growth_interval": 3}),
]


def run(kwargs):
    w = formula([3, 4], 0, torch.float32).requires_grad_()
    b = formula([3], 1, torch.float32).requires_grad_()
    x = inputs([5, 4], torch.float32)
    y = formula([5, 3], 2, torch.float32)
    opt = torch.optim.SGD([w, b], lr=0.1, momentum=0.9)
    scaler = torch.amp.GradScaler("cpu", **kwargs)
    steps = []
    for step in range(1, STEPS + 1):
        opt.zero_grad()
        loss = (x @ w.t() + b - y).pow(2).mean()
        scaled = scaler.scale(loss)
        scaled.backward()
        if step in INJECT:
            with torch.no_grad():
                w.grad[0, 0] = INJECT[step]
        record = {"loss": loss.item(), "scaled_loss": scaled.item()}
        if step in UNSCALE_FIRST:
            scaler.unscale_(opt)
            record["b_grad_unscaled"] = b.grad.clone()
        scaler.step(opt)
        scaler.update()
        record.update({"scale": scaler.get_scale(), "growth_tracker": scaler._get_growth_tracker(),
                       "w": w.detach().clone(), "b": b.detach().clone()})
        steps.append(record)
    return {"steps": steps, "state_dict": scaler.state_dict()}


def write(out_dir):
    warnings.simplefilter("ignore")
    cases = {name: run(kwargs) for name, kwargs in CASES}
    cases["inject"] = {str(k): ("inf" if math.isinf(v) else "nan") for k, v in INJECT.items()}
    doc = ("GradScaler('cpu') with SGD(lr=0.1, momentum=0.9) on loss = mean((x w^T + b - y)^2), float32; "
           "w.grad[1][1] set to inf/nan on the 'inject' steps; unscale_ called first on steps %s"
           % sorted(UNSCALE_FIRST))
    return write_lua(out_dir, NAME, cases, doc)
