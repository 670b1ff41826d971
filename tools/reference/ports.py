"""Reference values of the ports (spec/port_wlm_spec.lua, spec/port_resnet_spec.lua,
spec/port_dcgan_spec.lua): pytorch/examples word_language_model's RNNModel
(LSTM, GRU, tied), torchvision's ResNet (one block a stage) and dcgan's Generator and Discriminator, on the formula weights and inputs, float64: the
outputs, the final states, the loss, and for every parameter the projection
sum(grad * formula(shape, 100 + j)) of its gradient (one number a parameter,
sensitive to any element of it). The PyTorch models are bench/ports_torch.py's."""
import math
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


class TransformerModel(torch.nn.Transformer):
    """word_language_model/model.py's TransformerModel (and its PositionalEncoding)."""

    def __init__(self, ntoken, ninp, nhead, nhid, nlayers, dropout=0.5):
        super().__init__(d_model=ninp, nhead=nhead, dim_feedforward=nhid, num_encoder_layers=nlayers)
        self.src_mask = None
        self.pos_drop = torch.nn.Dropout(dropout)
        max_len = 5000
        pe = torch.zeros(max_len, ninp)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, ninp, 2).float() * (-math.log(10000.0) / ninp))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0).transpose(0, 1))
        self.input_emb = torch.nn.Embedding(ntoken, ninp)
        self.ninp = ninp
        self.decoder = torch.nn.Linear(ninp, ntoken)

    def forward(self, src):
        mask = torch.triu(torch.full((len(src), len(src)), float("-inf"), dtype=self.pe.dtype), 1)
        src = self.input_emb(src) * math.sqrt(self.ninp)
        src = self.pos_drop(src + self.pe[:src.size(0), :])
        output = self.encoder(src, mask=mask)
        return F.log_softmax(self.decoder(output), dim=-1)


def wlm_transformer():
    """TransformerModel(11, 8, 2, 16, 2) in eval mode (no dropout), float64."""
    ntoken, T, B = 11, 5, 2
    model = TransformerModel(ntoken, 8, 2, 16, 2).double()
    model.eval()
    fill_parameters(model)
    ids = torch.tensor([(7 * k + 3) % ntoken for k in range(T * B)]).view(T, B)
    targets = torch.tensor([(5 * k + 1) % ntoken for k in range(T * B)])
    output = model(ids)
    loss = torch.nn.CrossEntropyLoss()(output.view(-1, ntoken), targets)
    loss.backward()
    return {"names": [n for n, _ in model.named_parameters()], "output": output, "loss": loss,
            "grads": projections(model)}


def resnet():
    """torchvision's ResNet with one BasicBlock a stage (resnet18 has two: the
    same code, half the parameters to fill in the spec)."""
    model = ports_torch.ResNet([1, 1, 1, 1], num_classes=10).double()
    fill_parameters(model)
    model.train()
    x = inputs((2, 3, 64, 64))  # layer4 at 2x2: batch norm over 8 values, not a degenerate 2
    out = model(x)
    (out * formula(out.shape, 7)).sum().backward()
    return {"names": [n for n, _ in model.named_parameters()], "output": out, "grads": projections(model)}


def dcgan_nets(nz, ngf, ndf, nc):
    """dcgan/main.py's Generator and Discriminator (their nn.Sequential main)."""
    nn = torch.nn
    G = nn.Sequential(
        nn.ConvTranspose2d(nz, ngf * 8, 4, 1, 0, bias=False), nn.BatchNorm2d(ngf * 8), nn.ReLU(True),
        nn.ConvTranspose2d(ngf * 8, ngf * 4, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf * 4), nn.ReLU(True),
        nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf * 2), nn.ReLU(True),
        nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf), nn.ReLU(True),
        nn.ConvTranspose2d(ngf, nc, 4, 2, 1, bias=False), nn.Tanh())
    D = nn.Sequential(
        nn.Conv2d(nc, ndf, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),
        nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 2), nn.LeakyReLU(0.2, inplace=True),
        nn.Conv2d(ndf * 2, ndf * 4, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 4), nn.LeakyReLU(0.2, inplace=True),
        nn.Conv2d(ndf * 4, ndf * 8, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 8), nn.LeakyReLU(0.2, inplace=True),
        nn.Conv2d(ndf * 8, 1, 4, 1, 0, bias=False), nn.Sigmoid())
    return G.double(), D.double()


def dcgan():
    """G(z) and D on it (training mode), the generator's loss BCE(D(G(z)), 1)
    backward: the fake images' projection and row 32, D's outputs, the loss,
    both networks' gradient projections."""
    G, D = dcgan_nets(8, 4, 4, 1)
    fill_parameters(G)
    fill_parameters(D)
    z = inputs((2, 8, 1, 1))
    fake = G(z)
    d_real = D(inputs((2, 1, 64, 64))).view(-1, 1).squeeze(1)
    out = D(fake).view(-1, 1).squeeze(1)
    errG = torch.nn.BCELoss()(out, torch.ones(2, dtype=torch.float64))
    errG.backward()
    return {"fake_shape": list(fake.shape), "fake_proj": (fake * formula(fake.shape, 11)).sum(),
            "fake_row": fake[0, 0, 31], "d_real": d_real, "d_fake": out, "errG": errG,
            "gradsG": projections(G), "gradsD": projections(D)}


def write(out_dir):
    cases = {
        "wlm_lstm": wlm("LSTM", 6, 5, False),
        "wlm_gru": wlm("GRU", 6, 5, False),
        "wlm_lstm_tied": wlm("LSTM", 6, 6, True),
        "wlm_transformer": wlm_transformer(),
        "resnet": resnet(),
        "dcgan": dcgan(),
    }
    return write_lua(out_dir, NAME, cases, "word_language_model's RNNModel, torchvision's ResNet, dcgan on formula "
                     "weights (float64): outputs, states, loss, gradient projections sum(grad * formula(shape, 100 + j))")
