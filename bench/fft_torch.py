"""bench/fft_torch.py — the PyTorch side of bench/fft.lua: same cases, counts
and timing rules (median over REPEATS loops of the per-call CPU time).
    python bench/fft_torch.py [threads]"""
import sys

import torch

import timing_torch

threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
torch.set_num_threads(threads)
REPEATS = 7

torch.manual_seed(0)
x1024 = torch.randn(256, 1024)
x1000 = torch.randn(256, 1000)
z4096 = torch.complex(torch.randn(32, 4096), torch.randn(32, 4096))
img = torch.randn(8, 128, 128)
audio = torch.randn(16000)
window = torch.hann_window(400)
xg = torch.randn(64, 1024, requires_grad=True)


def backward():
    xg.grad = None
    torch.fft.rfft(xg).abs().sum().backward()


CASES = [
    ("rfft_256x1024", 20, lambda: torch.fft.rfft(x1024)),
    ("rfft_256x1000", 10, lambda: torch.fft.rfft(x1000)),
    ("irfft_256x1024", 20, lambda: torch.fft.irfft(torch.fft.rfft(x1024))),
    ("fft_c64_32x4096", 20, lambda: torch.fft.fft(z4096)),
    ("rfft2_8x128x128", 20, lambda: torch.fft.rfft2(img)),
    ("stft_16000_400_160", 20, lambda: torch.stft(audio, 400, hop_length=160, window=window, return_complex=True)),
    ("rfft_abs_backward_64x1024", 10, backward),
]
for name, n, fn in CASES:
    print("%s\t%.4f" % (name, timing_torch.timed(n, fn, REPEATS) * 1e3))
