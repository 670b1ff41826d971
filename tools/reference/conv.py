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
           "grad_input": x.grad, "grads": {n: p.grad for n, p in module.named_parameters()}, "train": train}
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
    # InstanceNorm
    c["inorm2d"] = case(nn.InstanceNorm2d(3), (2, 3, 4, 5))
    c["inorm2d_affine_track"] = case(nn.InstanceNorm2d(3, affine=True, track_running_stats=True, momentum=0.3),
                                     (2, 3, 4, 5))
    c["inorm2d_eval"] = case(nn.InstanceNorm2d(3, affine=True, track_running_stats=True), (2, 3, 4, 5), train=False)
    c["inorm2d_f32"] = case(nn.InstanceNorm2d(3, affine=True, eps=1e-3), (2, 3, 4, 5), f32)
    c["inorm1d"] = case(nn.InstanceNorm1d(4, affine=True), (2, 4, 6))
    c["inorm1d_unbatched"] = case(nn.InstanceNorm1d(4, track_running_stats=True), (4, 6))
    # Upsample / F.interpolate
    c["up_nearest_x2"] = case(nn.Upsample(scale_factor=2), (2, 3, 3, 4))
    c["up_nearest_size"] = case(nn.Upsample(size=(5, 7)), (1, 2, 3, 4))
    c["up_nearest_x1_5"] = case(nn.Upsample(scale_factor=1.5), (1, 2, 3, 5))
    c["up_nearest_down"] = case(nn.Upsample(size=(2, 3)), (1, 2, 5, 7))
    c["up_bilinear_x2"] = case(nn.Upsample(scale_factor=2, mode="bilinear"), (2, 2, 3, 4))
    c["up_bilinear_ac"] = case(nn.Upsample(size=(7, 5), mode="bilinear", align_corners=True), (1, 2, 3, 4))
    c["up_bilinear_down"] = case(nn.Upsample(scale_factor=0.6, mode="bilinear"), (1, 2, 6, 7))
    c["up_bilinear_recompute"] = case(nn.Upsample(scale_factor=1.7, mode="bilinear", recompute_scale_factor=True),
                                      (1, 2, 3, 4))
    c["up_bilinear_f32"] = case(nn.Upsample(scale_factor=(2, 3), mode="bilinear"), (2, 2, 3, 4), f32)
    c["up_nearest_1d"] = case(Fn(lambda x: F.interpolate(x, scale_factor=3)), (2, 2, 4))
    c["up_linear_1d"] = case(Fn(lambda x: F.interpolate(x, size=9, mode="linear")), (2, 2, 4))
    c["up_bilinear_nn"] = case(nn.UpsamplingBilinear2d(scale_factor=2), (1, 2, 3, 3))
    # padding modes and F.pad
    for mode in ("reflect", "replicate", "circular"):
        c["conv2d_" + mode] = case(nn.Conv2d(2, 3, 3, padding=1, padding_mode=mode), (2, 2, 5, 4))
        c["conv1d_" + mode] = case(nn.Conv1d(2, 3, 3, padding=2, padding_mode=mode), (2, 2, 6))
    c["conv2d_circular_asym"] = case(nn.Conv2d(2, 3, (3, 2), padding=(2, 1), padding_mode="circular"), (1, 2, 4, 5))
    c["conv2d_same_reflect"] = case(nn.Conv2d(2, 2, 4, padding="same", padding_mode="reflect"), (1, 2, 5, 6))
    c["pad_constant"] = case(Fn(lambda x: F.pad(x, (1, -1, 2, 0), value=0.5)), (2, 3, 4))
    c["pad_reflect"] = case(Fn(lambda x: F.pad(x, (2, 1, 1, 3), mode="reflect")), (1, 2, 4, 5))
    c["pad_replicate"] = case(Fn(lambda x: F.pad(x, (3, 1), mode="replicate")), (2, 2, 4))
    c["pad_circular"] = case(Fn(lambda x: F.pad(x, (1, 2, 2, 1), mode="circular")), (1, 2, 3, 4))
    # PReLU and the activations
    c["prelu"] = case(nn.PReLU(), (2, 3, 4))
    c["prelu_channels"] = case(nn.PReLU(3, init=0.1), (2, 3, 4, 5))
    c["leaky_relu"] = case(nn.LeakyReLU(0.2), (2, 3, 5))
    c["elu"] = case(nn.ELU(0.7), (2, 3, 5))
    c["silu"] = case(nn.SiLU(), (2, 3, 5))
    c["mish"] = case(nn.Mish(), (2, 3, 5))
    c["softplus"] = case(nn.Softplus(beta=2, threshold=1), (2, 3, 5))
    c["hardtanh"] = case(nn.Hardtanh(-0.5, 0.3), (2, 3, 5))
    # layers already in the tree
    c["groupnorm"] = case(nn.GroupNorm(2, 4), (2, 4, 3, 3))
    c["groupnorm_noaffine"] = case(nn.GroupNorm(3, 6, eps=1e-3, affine=False), (2, 6, 5))
    c["conv1d"] = case(nn.Conv1d(4, 6, 3, stride=2, padding=1, dilation=2, groups=2), (2, 4, 9))
    c["conv1d_unbatched"] = case(nn.Conv1d(2, 3, 2, bias=False), (2, 5))
    c["adaptive_avg_pool"] = case(nn.AdaptiveAvgPool2d((3, 2)), (2, 3, 7, 5))
    c["adaptive_avg_pool_even"] = case(nn.AdaptiveAvgPool2d(4), (1, 2, 8, 8))
    c["adaptive_avg_pool_none"] = case(nn.AdaptiveAvgPool2d((None, 3)), (1, 2, 4, 7))
    c["dropout2d_eval"] = case(nn.Dropout2d(0.5), (2, 3, 2, 2), train=False)
    return c


def write(out_dir):
    return write_lua(out_dir, NAME, cases(), "outputs and gradients of the convolutional shelf")
