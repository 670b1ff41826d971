#!/usr/bin/env python3
"""Writes the reference values that the specs compare wick's layers, optimizers
and schedulers against, computed with the current PyTorch (2.x, from PyPI):

    PY=$(../shared/bench/setup-torch.sh)
    $PY tools/make_reference.py            # every family
    $PY tools/make_reference.py rnn optim  # only these

Each family is one module in tools/reference/ (NAME, write(out_dir)); it writes
spec/fixtures/ref_<NAME>.lua, a Lua table the spec of that family loads with
dofile. Inputs and weights come from formulas the specs repeat (reference.common),
so no random generator has to agree between the two sides.
"""
import importlib
import os
import pkgutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
OUT = os.path.join(HERE, "..", "spec", "fixtures")


def families():
    import reference
    names = [m.name for m in pkgutil.iter_modules(reference.__path__) if m.name != "common"]
    return {n: importlib.import_module("reference." + n) for n in sorted(names)}


def main(argv):
    found = families()
    wanted = argv or sorted(found)
    for name in wanted:
        if name not in found:
            sys.exit("make_reference.py: no family %r (have: %s)" % (name, ", ".join(sorted(found))))
    for name in wanted:
        path = found[name].write(OUT)
        print("wrote", os.path.relpath(path))


if __name__ == "__main__":
    main(sys.argv[1:])
