"""Reference values of the ports (spec/port_wlm_spec.lua, spec/port_resnet_spec.lua):
pytorch/examples word_language_model's RNNModel (LSTM, GRU, tied) and
torchvision's ResNet-18, on the formula weights and inputs, float64: the
outputs, the final states, the loss, and for every parameter the projection
sum(grad * formula(shape, 100 + j)) of its gradient (one number a parameter,
sensitive to any element of it). The PyTorch models are bench/ports_torch.py's."""
import os
import sys

import torch
import torch.nn.functional as F

from reference.common import formula, inputs, fill_parameters, write_lua

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import ports_torch  # noqa: E402

NAME = "ports"


def projections(module):
    return [(p.grad * formula(p.shape, 100 + j)).sum().item() for j, (_, p) in enumerate(module.named_parameters())]


def wlm(rnn_type, ninp, nhid, tied):
    ntoken, T, B = 11, 4, 3
    model = ports_torch.RNNModel(rnn_type, ntoken, ninp, nhid, 2, 0.0, tied).double()
    fill_parameters(model)
    ids = torch.tensor([(7 * k + 3) % ntoken for k in range(T * B)]).view(T, B)
    targets = torch.tensor([(5 * k + 1) % ntoken for k in range(T * B)])
    hidden = model.init_hidden(B)
    output, hidden = model(ids, hidden)
    loss = torch.nn.CrossEntropyLoss()(output.view(-1, ntoken), targets)
    loss.backward()
    case = {"names": [n for n, _ in model.named_parameters()], "output": output, "loss": loss,
            "grads": projections(model)}
    if rnn_type == "LSTM":
        case["h"], case["c"] = hidden
    else:
        case["h"] = hidden
    return case


def resnet18():
    model = ports_torch.resnet18(num_classes=10).double()
    fill_parameters(model)
    model.train()
    x = inputs((2, 3, 64, 64))  # layer4 at 2x2: batch norm over 8 values, not a degenerate 2
    out = model(x)
    (out * formula(out.shape, 7)).sum().backward()
    return {"names": [n for n, _ in model.named_parameters()], "output": out, "grads": projections(model)}


def write(out_dir):
    cases = {
        "wlm_lstm": wlm("LSTM", 6, 5, False),
        "wlm_gru": wlm("GRU", 6, 5, False),
        "wlm_lstm_tied": wlm("LSTM", 6, 6, True),
        "resnet18": resnet18(),
    }
    return write_lua(out_dir, NAME, cases, "word_language_model's RNNModel and torchvision's ResNet-18 on formula "
                     "weights (float64): outputs, states, loss, gradient projections sum(grad * formula(shape, 100 + j))")
