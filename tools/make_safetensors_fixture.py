"""Writes spec/fixtures/from_python.safetensors with the reference `safetensors`
library (pip install safetensors numpy), so the specs check that wick reads
files other tools wrote:  python3 tools/make_safetensors_fixture.py"""
import numpy as np
from safetensors.numpy import save_file

save_file({
    "weight": np.arange(6, dtype=np.float32).reshape(2, 3),
    "ids": np.array([1, -2, 3], dtype=np.int64),
    "half": np.array([0.5, -1.0], dtype=np.float16),
    "mask": np.array([True, False, True]),
}, "spec/fixtures/from_python.safetensors", metadata={"note": "made by tools/make_safetensors_fixture.py"})
