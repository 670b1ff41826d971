# bench/mnist_cnn_torch.py THREADS — bench/mnist_cnn.lua in PyTorch: pytorch/examples'
# mnist/main.py Net, one training pass over 10k random images (batch 64,
# Adadelta lr 1.0) and one evaluation (batch 1000), after an untimed pass of each.
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
torch.manual_seed(1)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = self.dropout1(x)
        x = F.relu(self.fc1(torch.flatten(x, 1)))
        x = self.fc2(self.dropout2(x))
        return F.log_softmax(x, dim=1)


N = 10000
images = torch.randn(N, 1, 28, 28)
labels = torch.randint(0, 10, (N,))
model = Net()
optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0)


def train(batch):
    model.train()
    for i in range(0, N, batch):
        data, target = images[i:i + batch], labels[i:i + batch]
        optimizer.zero_grad()
        loss = F.nll_loss(model(data), target)
        loss.backward()
        optimizer.step()


def evaluate(batch):
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, N, batch):
            pred = model(images[i:i + batch]).argmax(dim=1)
            correct += pred.eq(labels[i:i + batch]).sum().item()
    return correct


train(64)
t0 = time.perf_counter()
train(64)
print(f"train_10k\t{(time.perf_counter() - t0) * 1000:.1f}", flush=True)
evaluate(1000)
t0 = time.perf_counter()
evaluate(1000)
print(f"eval_10k\t{(time.perf_counter() - t0) * 1000:.1f}", flush=True)
