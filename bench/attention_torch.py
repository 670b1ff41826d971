"""bench/attention_torch.py — the PyTorch side of bench/attention.lua: same cases,
counts and timing rules (median over REPEATS loops of the per-call CPU time
of this process: one thread on both sides, robust on a shared machine).
    python bench/attention_torch.py [threads]"""
import sys

import torch
import torch.nn.functional as F

import timing_torch

threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
torch.set_num_threads(threads)
REPEATS = 7

# name, batch, heads, L (= S), head dim, is_causal, dropout_p, calls per loop
CASES = [
    ("gpt_causal", 12, 4, 64, 32, True, 0.0, 100),
    ("gpt_full", 12, 4, 64, 32, False, 0.0, 100),
    ("gpt_causal_dropout", 12, 4, 64, 32, True, 0.1, 100),
    ("long_causal", 1, 4, 1024, 64, True, 0.0, 3),
]


def timed(n, fn):
    return timing_torch.timed(n, fn, REPEATS)


torch.manual_seed(0)
for name, B, H, T, D, causal, p, n in CASES:
    q = torch.randn(B, H, T, D, requires_grad=True)
    k = torch.randn(B, H, T, D, requires_grad=True)
    v = torch.randn(B, H, T, D, requires_grad=True)
    g = torch.randn(B, H, T, D)

    def fwd():
        with torch.no_grad():
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal, dropout_p=p)

    def fwdbwd():
        q.grad = k.grad = v.grad = None
        F.scaled_dot_product_attention(q, k, v, is_causal=causal, dropout_p=p).backward(g)

    print(f"{name}_fwd\t{timed(n, fwd) * 1e3:.4f}")
    print(f"{name}_fwdbwd\t{timed(n, fwdbwd) * 1e3:.4f}")

# the attention blocks, forward + backward in training mode
nn = torch.nn
torch.manual_seed(0)
T, B, E = 35, 20, 200
enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(E, 2, 200, 0.2), 2, enable_nested_tensor=False)
x = torch.randn(T, B, E)
mask = nn.Transformer.generate_square_subsequent_mask(T)
print(f"wlm_encoder_fwdbwd\t{timed(10, lambda: enc(x, mask).sum().backward()) * 1e3:.4f}")
mha = nn.MultiheadAttention(E, 4)
kpm = torch.zeros(B, T, dtype=torch.bool)


def mha_step():
    out, w = mha(x, x, x, key_padding_mask=kpm)
    (out.sum() + w.sum()).backward()


print(f"mha_weights_fwdbwd\t{timed(10, mha_step) * 1e3:.4f}")
model = nn.Transformer(128, 4, 2, 2, 256, 0.1, batch_first=True)
src, tgt = torch.randn(16, 32, 128), torch.randn(16, 24, 128)
tmask = nn.Transformer.generate_square_subsequent_mask(24)
print(f"transformer_fwdbwd\t{timed(10, lambda: model(src, tgt, tgt_mask=tmask).sum().backward()) * 1e3:.4f}")
