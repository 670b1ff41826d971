"""What every reference family shares: deterministic fills that the Lua specs
repeat (spec/support.lua has the same formulas), and a writer of Lua tables."""
import math
import os

import torch


def formula(shape, j=0, dtype=torch.float64):
    """Element i (row-major) is 0.5 * sin(0.37 * i + j): weights, parameter j."""
    n = math.prod(shape)
    return torch.tensor([0.5 * math.sin(0.37 * i + j) for i in range(n)], dtype=dtype).view(*shape)


def inputs(shape, dtype=torch.float64):
    """Element i (row-major) is cos(0.23 * i): inputs."""
    n = math.prod(shape)
    return torch.tensor([math.cos(0.23 * i) for i in range(n)], dtype=dtype).view(*shape)


def fill_parameters(module):
    """Fills the j-th parameter (named_parameters order) with formula(shape, j)."""
    with torch.no_grad():
        for j, (_, p) in enumerate(module.named_parameters()):
            p.copy_(formula(p.shape, j, p.dtype))


def lua_value(v):
    """A Lua literal: tensors as nested arrays (with shape), lists, dicts with
    string keys, numbers (repr, so float64 survives), booleans, strings, None."""
    if isinstance(v, torch.Tensor):
        v = v.detach()
        if v.dim() == 0:
            return lua_value(v.item())
        return "{ shape = %s, %s }" % (lua_value(list(v.shape)), ", ".join(lua_value(x) for x in v.reshape(-1).tolist()))
    if isinstance(v, dict):
        return "{ " + ", ".join("[%s] = %s" % (lua_value(k), lua_value(x)) for k, x in v.items()) + " }"
    if isinstance(v, (list, tuple)):
        return "{ " + ", ".join(lua_value(x) for x in v) + " }"
    if v is None:
        return "nil"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "(0/0)"
        if math.isinf(v):
            return "math.huge" if v > 0 else "-math.huge"
        return repr(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    raise TypeError(type(v))


def write_lua(out_dir, family, cases, doc):
    """Writes spec/fixtures/ref_<family>.lua: `return { case = value, ... }`."""
    path = os.path.join(out_dir, "ref_%s.lua" % family)
    lines = ["-- Written by tools/make_reference.py (%s) with PyTorch %s: %s" % (family, torch.__version__, doc),
             "return {"]
    for name, value in cases.items():
        lines.append("  [%s] = %s," % (lua_value(name), lua_value(value)))
    lines.append("}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path
