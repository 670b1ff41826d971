"""What the PyTorch sides of the GPU benchmarks share: PyTorch with a usable GPU,
or a "skipped" line and exit status 0 (bench/gpu.sh reads it)."""
import sys


def torch_with_cuda():
    try:
        import torch
    except ImportError:
        print("no PyTorch: skipped")
        sys.exit(0)
    if not torch.cuda.is_available():
        print("no CUDA GPU: skipped")
        sys.exit(0)
    return torch
