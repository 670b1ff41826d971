"""PyTorch's side (eager mode) of bench/gpu_train.lua: one epoch of the
Fashion-MNIST MLP or CNN on synthetic data of the data set's shape, SGD
(lr 0.01, momentum 0.9), cross entropy, batch 64 unless given.
   python3 bench/gpu_train_torch.py mlp|cnn [resident|loader] [batch]
resident: the data set on the GPU, batches are slices; loader: the data set in
CPU memory, a shuffling DataLoader with pin_memory, batches copied non_blocking.
Prints epoch_s (after 20 warm-up steps, synchronized before both clock reads),
loss, peak_mem_mb."""
import sys
import time

from gpu_torch_common import torch_with_cuda

torch = torch_with_cuda()
from torch import nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

model_name = sys.argv[1] if len(sys.argv) > 1 else "mlp"
mode = sys.argv[2] if len(sys.argv) > 2 else "resident"
batch = int(sys.argv[3]) if len(sys.argv) > 3 else 64
N = 60000
device = torch.device("cuda:0")


def emit(name, value):
    print("%s\t%.6g" % (name, value), flush=True)


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, padding=1)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc1 = nn.Linear(64 * 7 * 7, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


torch.manual_seed(1)
if model_name == "cnn":
    model = CNN()
else:
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                          nn.Linear(256, 10))
model = model.to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()

if mode == "resident":
    images = torch.rand(N, 1, 28, 28, device=device)
    labels = (torch.rand(N, device=device) * 10).long()
else:
    images = torch.rand(N, 1, 28, 28)
    labels = (torch.rand(N) * 10).long()


def epoch_batches():
    if mode == "resident":
        for start in range(0, N, batch):
            yield images[start:start + batch], labels[start:start + batch]
    else:
        loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(images, labels), batch_size=batch,
                                             shuffle=True, pin_memory=True)
        for x, y in loader:
            yield x.to(device, non_blocking=True), y.to(device, non_blocking=True)


def step(x, y):
    opt.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    return loss


warm = epoch_batches()
for _ in range(20):
    step(*next(warm))
del warm
torch.cuda.synchronize()

t0 = time.perf_counter()
last = None
for x, y in epoch_batches():
    last = step(x, y)
torch.cuda.synchronize()
emit("epoch_s", time.perf_counter() - t0)
emit("loss", last.item())
emit("peak_mem_mb", torch.cuda.max_memory_allocated() / 2 ** 20)
