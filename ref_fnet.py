import torch, sys
sys.path.insert(0, "/tmp/ports/k1")
from common import *
x = det([5, 2, 6], 0.4)
def mix(x):
    return torch.real(torch.fft.fft(torch.fft.fft(x, dim=2), dim=0))
y = mix(x); print(y.dtype); show("fnet_mix", y)
show("fnet_fftn", torch.fft.fftn(x, dim=(0, 2)).real)
xr = x.clone().requires_grad_()
(mix(xr) * det([5, 2, 6], 1.1)).sum().backward()
show("fnet_grad", xr.grad)
