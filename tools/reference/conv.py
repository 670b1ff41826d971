"""The convolutional shelf (spec/conv_shelf_spec.lua): ConvTranspose2d,
InstanceNorm, Upsample / F.interpolate, padding modes (Conv1d/Conv2d, F.pad),
PReLU, GroupNorm, Conv1d, AdaptiveAvgPool2d and the activations.

Each case runs a module (parameters filled by fill_parameters) on
inputs(x_shape) and records its output, the gradient of the input and of every
parameter for loss = sum(y * formula(y.shape, 99)) (a weighted sum, so a wrong
position or channel changes the gradients too). The spec builds the same
module from the case's name."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from reference.common import formula, inputs, fill_parameters, write_lua

NAME = "conv"


class Fn(nn.Module):
    """A function as a module (for F.interpolate, F.pad)."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


def case(module, x_shape, dtype=torch.float64, forward_args=(), train=True):
    module = module.to(dtype)
    fill_parameters(module)
    module.train(train)
    x = inputs(x_shape, dtype).requires_grad_(True)
    y = module(x, *forward_args)
    (y * formula(y.shape, 99, dtype)).sum().backward()
    out = {"x_shape": list(x_shape), "dtype": str(dtype).replace("torch.", ""), "y": y,
           "grad_input": x.grad, "grads": {n: p.grad for n, p in module.named_parameters()}}
    bufs = {n: b for n, b in module.named_buffers() if b.is_floating_point()}
    if bufs:
        out["buffers"] = bufs
    return out


def cases():
    c = {}
    f32 = torch.float32
    # ConvTranspose2d
    c["convt_basic"] = case(nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1), (2, 3, 5, 4))
    c["convt_basic_f32"] = case(nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1), (2, 3, 5, 4), f32)
    c["convt_groups"] = case(nn.ConvTranspose2d(4, 6, (2, 3), stride=(1, 2), padding=(1, 0), output_padding=(1, 1),
                                                groups=2, bias=False, dilation=2), (2, 4, 4, 3))
    c["convt_dcgan"] = case(nn.ConvTranspose2d(6, 8, 4, 1, 0, bias=False), (3, 6, 1, 1))
    c["convt_dcgan_s2"] = case(nn.ConvTranspose2d(8, 4, 4, 2, 1, bias=False), (3, 8, 4, 4))
    c["convt_unbatched"] = case(nn.ConvTranspose2d(2, 3, 3, stride=2), (2, 3, 3))
    c["convt_1x1_dil"] = case(nn.ConvTranspose2d(2, 3, 1, stride=1, dilation=2, output_padding=1), (1, 2, 3, 3))
    c["convt_output_size"] = case(nn.ConvTranspose2d(3, 2, 3, stride=3, padding=1), (1, 3, 3, 4),
                                  forward_args=([8, 11],))
    return c


def write(out_dir):
    return write_lua(out_dir, NAME, cases(), "outputs and gradients of the convolutional shelf")
