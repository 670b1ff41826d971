#!/usr/bin/python3
"""Writes the PyTorch checkpoint fixtures read by spec/pytorch_spec.lua.

Run from the repository root with /usr/bin/python3 (PyTorch 1.13):
    /usr/bin/python3 tools/make_pt_fixtures.py
"""
import os
from collections import OrderedDict

import torch
import torch.nn as nn

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "spec", "fixtures")


def lua_number(x):
    return repr(float(x))


def lua_value(v, indent=""):
    if isinstance(v, torch.Tensor):
        return lua_value(v.tolist(), indent)
    if isinstance(v, (list, tuple)):
        return "{ " + ", ".join(lua_value(x, indent) for x in v) + " }"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return lua_number(v)
    if isinstance(v, str):
        return '"' + v + '"'
    raise TypeError(type(v))


def state_dict_fixture():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 2), nn.ReLU(), nn.Linear(2, 1))
    sd = model.state_dict()
    torch.save(sd, os.path.join(OUT, "pt_state_dict.pt"))
    x = torch.tensor([[1.0, -2.0, 0.5], [0.25, 0.75, -1.5], [3.0, 1.0, 2.0]])
    with torch.no_grad():
        y = model(x)
    lines = ["-- Written by tools/make_pt_fixtures.py: the values in pt_state_dict.pt", "return {"]
    lines.append("  state = {")
    for k, v in sd.items():
        lines.append('    ["%s"] = %s,' % (k, lua_value(v)))
    lines.append("  },")
    lines.append("  input = %s," % lua_value(x))
    lines.append("  output = %s," % lua_value(y))
    lines.append("}")
    with open(os.path.join(OUT, "pt_state_dict_expected.lua"), "w") as f:
        f.write("\n".join(lines) + "\n")


def mixed_fixture():
    base = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    d = {
        "long": torch.tensor([1, -2, 3, 2**40], dtype=torch.int64),
        "double": torch.tensor([[0.5, -1.25], [3.0, 1e-3]], dtype=torch.float64),
        "base": base,
        "transposed": base.t(),
        "list": [1, 2.5, "three"],
        "tuple": (4, "five", True),
        "nested": OrderedDict([("a", 1), ("b", {"c": torch.tensor([7, 8], dtype=torch.int32)})]),
        "int": 42,
        "big": -(2**40),
        "float": 0.125,
        "string": "hello",
        "flag": True,
        "off": False,
        "nothing": None,
        "bytes_t": torch.tensor([1, 255], dtype=torch.uint8),
        "bools": torch.tensor([True, False]),
        "half": torch.tensor([1.5, -2.0], dtype=torch.float16),
    }
    torch.save(d, os.path.join(OUT, "pt_mixed.pt"))


class Payload:
    def __reduce__(self):
        return (os.system, ("echo pwned > /tmp/wick_pwned",))


def malicious_fixture():
    torch.save({"weight": torch.zeros(2), "evil": Payload()}, os.path.join(OUT, "pt_malicious.pt"))


if __name__ == "__main__":
    state_dict_fixture()
    mixed_fixture()
    malicious_fixture()
