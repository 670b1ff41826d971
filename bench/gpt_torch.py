"""The PyTorch side of bench/gpt.sh: nanoGPT's model (model.py's GPT, written out
here with the same semantics: fused F.scaled_dot_product_attention, tied lm_head,
normal(0, 0.02) init with the scaled c_proj init, AdamW decay/no-decay groups)
trained on the same text, the same batches and from the same initial weights as
bench/gpt.lua.

    python bench/gpt_torch.py --write-init PATH      # the initial state_dict (torch.save)
    python bench/gpt_torch.py --init PATH --iters N --warmup W [--profile]

Prints one line: `torch ms_per_iter=<median CPU ms> wall_ms=<median wall ms> loss=<loss after
warmup+iters steps> ...`.
tools/make_gpt_fixture.py imports GPT and GPTConfig from here.
"""
import argparse
import math
import os
import time
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.nn import functional as F


class LayerNorm(nn.Module):
    def __init__(self, ndim, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

    def forward(self, input):
        return F.layer_norm(input, self.weight.shape, self.weight, self.bias, 1e-5)


class CausalSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        assert config.n_embd % config.n_head == 0
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.attn_dropout = nn.Dropout(config.dropout)
        self.resid_dropout = nn.Dropout(config.dropout)
        self.n_head = config.n_head
        self.n_embd = config.n_embd
        self.dropout = config.dropout

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=None,
                                           dropout_p=self.dropout if self.training else 0, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln_1 = LayerNorm(config.n_embd, bias=config.bias)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = LayerNorm(config.n_embd, bias=config.bias)
        self.mlp = MLP(config)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


@dataclass
class GPTConfig:
    block_size: int = 1024
    vocab_size: int = 50304
    n_layer: int = 12
    n_head: int = 12
    n_embd: int = 768
    dropout: float = 0.0
    bias: bool = True


class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            wpe=nn.Embedding(config.block_size, config.n_embd),
            drop=nn.Dropout(config.dropout),
            h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
            ln_f=LayerNorm(config.n_embd, bias=config.bias),
        ))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():
            if pn.endswith('c_proj.weight'):
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    def get_num_params(self, non_embedding=True):
        n_params = sum(p.numel() for p in self.parameters())
        if non_embedding:
            n_params -= self.transformer.wpe.weight.numel()
        return n_params

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        if targets is not None:
            logits = self.lm_head(x)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        else:
            logits = self.lm_head(x[:, [-1], :])
            loss = None
        return logits, loss

    def configure_optimizers(self, weight_decay, learning_rate, betas):
        param_dict = {pn: p for pn, p in self.named_parameters() if p.requires_grad}
        decay_params = [p for n, p in param_dict.items() if p.dim() >= 2]
        nodecay_params = [p for n, p in param_dict.items() if p.dim() < 2]
        optim_groups = [
            {'params': decay_params, 'weight_decay': weight_decay},
            {'params': nodecay_params, 'weight_decay': 0.0},
        ]
        return torch.optim.AdamW(optim_groups, lr=learning_rate, betas=betas)


# ---- the shared bench protocol (bench/gpt.lua does the same) ----
LICENSES = "/usr/share/common-licenses"


def read_text(path):
    if path:
        with open(path, "rb") as f:
            return f.read()
    parts = []
    for name in sorted(os.listdir(LICENSES)):
        with open(os.path.join(LICENSES, name), "rb") as f:
            parts.append(f.read())
    return b"".join(parts)


def encoded_train_split(text):
    chars = sorted(set(text))          # bytes, as the Lua side reads them
    stoi = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
    return data[:int(len(data) * 0.9)], len(chars)


def batch_offsets(step, batch_size, n):
    # the same integer hash on both sides: no RNG, so both see the same batches
    return [((step * batch_size + b + 1) * 2654435761) % 4294967296 % n for b in range(batch_size)]


def get_batch(data, step, batch_size, block_size):
    ix = batch_offsets(step, batch_size, len(data) - block_size)
    x = torch.stack([data[i:i + block_size] for i in ix])
    y = torch.stack([data[i + 1:i + 1 + block_size] for i in ix])
    return x, y


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--text", default=None)
    ap.add_argument("--write-init", default=None)
    ap.add_argument("--init", default=None)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--n-layer", type=int, default=4)
    ap.add_argument("--n-head", type=int, default=4)
    ap.add_argument("--n-embd", type=int, default=128)
    ap.add_argument("--block-size", type=int, default=64)
    ap.add_argument("--batch-size", type=int, default=12)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    data, vocab_size = encoded_train_split(read_text(args.text))
    torch.manual_seed(1337)
    config = GPTConfig(n_layer=args.n_layer, n_head=args.n_head, n_embd=args.n_embd, block_size=args.block_size,
                       bias=False, vocab_size=vocab_size, dropout=0.0)
    model = GPT(config)
    if args.write_init:
        torch.save(model.state_dict(), args.write_init)
        print("wrote %s (%d parameters, vocab %d)" % (args.write_init, model.get_num_params(), vocab_size))
        return
    if args.init:
        model.load_state_dict(torch.load(args.init))
    optimizer = model.configure_optimizers(1e-1, args.lr, (0.9, 0.99))

    # CPU time of the process per iteration (one thread: the work itself, robust
    # to other processes on a shared machine), and wall time
    times, walls = [], []
    loss = None
    for step in range(args.warmup + args.iters):
        X, Y = get_batch(data, step, args.batch_size, args.block_size)
        c0, t0 = time.process_time(), time.perf_counter()
        _, loss = model(X, Y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        lossf = loss.item()
        if step >= args.warmup:
            times.append(time.process_time() - c0)
            walls.append(time.perf_counter() - t0)
    times.sort()
    walls.sort()
    median = times[len(times) // 2] * 1000
    print("torch ms_per_iter=%.3f wall_ms=%.3f loss=%.6f steps=%d threads=%d version=%s" % (
        median, walls[len(walls) // 2] * 1000, lossf, args.warmup + args.iters, torch.get_num_threads(),
        torch.__version__))
    if args.profile:
        profile(model, optimizer, data, args, vocab_size)


def profile(model, optimizer, data, args, V):
    """bench/gpt.lua --profile's table: the phases of an iteration, then the
    model's ops alone at the model's shapes (forward + backward, medians of 10)."""
    def med(ts):
        ts = sorted(ts)
        return 1000 * ts[len(ts) // 2]
    step = args.warmup + args.iters
    phases = {k: [] for k in ("forward", "backward", "clip", "optimizer step", "zero_grad")}
    for k in range(10):
        X, Y = get_batch(data, step + k, args.batch_size, args.block_size)
        t0 = time.process_time()
        _, loss = model(X, Y)
        loss.item()
        t1 = time.process_time()
        loss.backward()
        t2 = time.process_time()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        t3 = time.process_time()
        optimizer.step()
        t4 = time.process_time()
        optimizer.zero_grad(set_to_none=True)
        t5 = time.process_time()
        for name, dt in zip(phases, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4)):
            phases[name].append(dt)
    for name, ts in phases.items():
        print("  phase %-16s %8.3f ms" % (name, med(ts)))
    B, T, C, H, L = args.batch_size, args.block_size, args.n_embd, args.n_head, args.n_layer

    def leaf(*shape):
        return torch.randn(*shape, requires_grad=True)
    x, h4 = leaf(B, T, C), leaf(B, T, 4 * C)
    q, k, v = leaf(B, H, T, C // H), leaf(B, H, T, C // H), leaf(B, H, T, C // H)
    logits, target = leaf(B * T, V), torch.randint(V, (B * T,))
    w, b, W, emb = leaf(C), leaf(C), leaf(4 * C, C), leaf(V, C)
    idx = torch.randint(V, (B, T))
    ops = [
        ("gelu (B,T,4C)", lambda: F.gelu(h4).sum().backward(), L),
        ("layer_norm (B,T,C)", lambda: F.layer_norm(x, (C,), w, b, 1e-5).sum().backward(), 2 * L + 1),
        ("sdpa causal (B,H,T,hs)", lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward(), L),
        ("cross_entropy (B*T,V)", lambda: F.cross_entropy(logits, target).backward(), 1),
        ("linear C->4C (c_fc)", lambda: F.linear(x, W).sum().backward(), L),
        ("linear 4C->C (mlp c_proj)", lambda: F.linear(h4, W.t()).sum().backward(), L),
        ("linear C->V (lm_head)", lambda: F.linear(x, emb).sum().backward(), 1),
        ("embedding", lambda: F.embedding(idx, emb).sum().backward(), 1),
    ]
    print("  op (fwd + bwd of a sum, CPU ms)   ms/call   calls/iter   ms/iter")
    for name, fn, calls in ops:
        ts = []
        for _ in range(10):
            t0 = time.process_time()
            fn()
            ts.append(time.process_time() - t0)
        ms = med(ts)
        print("  %-34s %8.3f   %6d   %8.3f" % (name, ms, calls, ms * calls))


if __name__ == "__main__":
    main()
