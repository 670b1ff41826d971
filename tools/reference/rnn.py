"""Recurrent layers and cells (nn.RNN, nn.LSTM, nn.GRU, nn.RNNCell, nn.LSTMCell,
nn.GRUCell): outputs, final states and the gradients of the input, the initial
states and every parameter, for a loss that weights each output element
differently (sum(out * formula(out.shape, 90)) + the same for h (91) and c (92)).
Every case in float64 and float32. Variable lengths go through PyTorch's
pack_padded_sequence (enforce_sorted=False) and pad_packed_sequence
(total_length = the padded length): wick's `lengths` option must give the same.

Each case carries its configuration, so the spec builds the same module:
kind, input_size, hidden_size, num_layers, bias, batch_first, bidirectional,
nonlinearity, x_shape, h0 (initial states given), lengths, dtype."""
import torch
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from .common import fill_parameters, formula, inputs, write_lua

NAME = "rnn"

CASES = {
    # name: kind, (input_size, hidden_size), options, x_shape, h0, lengths
    "lstm_bi2_bf_h0": ("LSTM", (3, 4), dict(num_layers=2, batch_first=True, bidirectional=True), (3, 5, 3), True, None),
    "lstm_1": ("LSTM", (3, 5), dict(), (6, 2, 3), False, None),
    "lstm_nobias_unbatched": ("LSTM", (3, 4), dict(bias=False), (5, 3), True, None),
    "gru_bi2_h0": ("GRU", (3, 4), dict(num_layers=2, bidirectional=True), (5, 3, 3), True, None),
    "gru_bf": ("GRU", (2, 3), dict(batch_first=True), (2, 4, 2), False, None),
    "rnn_tanh_h0": ("RNN", (3, 4), dict(), (5, 2, 3), True, None),
    "rnn_relu_bi2": ("RNN", (3, 4), dict(num_layers=2, nonlinearity="relu", bidirectional=True), (4, 2, 3), False, None),
    "lstm_lengths_bi2": ("LSTM", (3, 4), dict(num_layers=2, bidirectional=True), (5, 3, 3), True, [5, 2, 4]),
    "gru_lengths_bf": ("GRU", (3, 4), dict(batch_first=True, bidirectional=True), (3, 6, 3), True, [3, 6, 1]),
    "rnn_lengths": ("RNN", (3, 4), dict(), (4, 3, 3), False, [4, 1, 3]),
    "lstmcell_h0": ("LSTMCell", (3, 4), dict(), (2, 3), True, None),
    "lstmcell_unbatched": ("LSTMCell", (3, 4), dict(), (3,), False, None),
    "grucell_h0": ("GRUCell", (3, 4), dict(), (2, 3), True, None),
    "rnncell_relu_h0": ("RNNCell", (3, 4), dict(nonlinearity="relu"), (2, 3), True, None),
    "rnncell_nobias": ("RNNCell", (3, 4), dict(bias=False), (2, 3), False, None),
}


def state_shape(kind, m, x_shape):
    if kind.endswith("Cell"):
        return (m.hidden_size,) if len(x_shape) == 1 else (x_shape[0], m.hidden_size)
    dirs = 2 if m.bidirectional else 1
    if len(x_shape) == 2:
        return (dirs * m.num_layers, m.hidden_size)
    b = x_shape[0] if m.batch_first else x_shape[1]
    return (dirs * m.num_layers, b, m.hidden_size)


def run(kind, sizes, opts, x_shape, with_h0, lengths, dtype):
    m = getattr(torch.nn, kind)(*sizes, **opts).to(dtype)
    fill_parameters(m)
    x = inputs(x_shape, dtype).requires_grad_()
    lstm = kind.startswith("LSTM")
    hs = state_shape(kind, m, x_shape)
    h0 = c0 = None
    if with_h0:
        h0 = formula(hs, 77, dtype).requires_grad_()
        if lstm:
            c0 = formula(hs, 78, dtype).requires_grad_()
    hx = ((h0, c0) if lstm else h0) if with_h0 else None
    if kind.endswith("Cell"):
        res = m(x, hx)
        out = None
        h, c = res if lstm else (res, None)
    elif lengths is not None:
        packed = pack_padded_sequence(x, torch.tensor(lengths), batch_first=m.batch_first, enforce_sorted=False)
        out_p, hn = m(packed, hx)
        total = x_shape[1] if m.batch_first else x_shape[0]
        out, _ = pad_packed_sequence(out_p, batch_first=m.batch_first, total_length=total)
        h, c = hn if lstm else (hn, None)
    else:
        out, hn = m(x, hx)
        h, c = hn if lstm else (hn, None)
    loss = (h * formula(h.shape, 91, dtype)).sum()
    if out is not None:
        loss = loss + (out * formula(out.shape, 90, dtype)).sum()
    if c is not None:
        loss = loss + (c * formula(c.shape, 92, dtype)).sum()
    loss.backward()
    config = dict(kind=kind, input_size=sizes[0], hidden_size=sizes[1], x_shape=list(x_shape), h0=with_h0,
                  lengths=lengths, dtype=str(dtype).replace("torch.", ""), **opts)
    r = dict(config=config, names=[n for n, _ in m.named_parameters()], h=h, grad_x=x.grad,
             grads={n: p.grad for n, p in m.named_parameters()})
    if out is not None:
        r["out"] = out
    if c is not None:
        r["c"] = c
    if with_h0:
        r["grad_h0"] = h0.grad
        if lstm:
            r["grad_c0"] = c0.grad
    return r


def write(out_dir):
    cases = {}
    for name, spec in CASES.items():
        for dtype, suffix in ((torch.float64, "f64"), (torch.float32, "f32")):
            cases["%s_%s" % (name, suffix)] = run(*spec, dtype)
    return write_lua(out_dir, NAME, cases, "recurrent layers and cells: outputs, states, all gradients")
