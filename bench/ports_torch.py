"""PyTorch's side of bench/ports.lua (bench/ports.sh runs both, alternating):
the same models, data, batches and steps.

    python bench/ports_torch.py THREADS lm CORPUS_DIR     # one epoch of the LSTM language model
    python bench/ports_torch.py THREADS resnet            # ResNet-18 steps on Fashion-MNIST

The models are written here for PyTorch the way pytorch/examples'
word_language_model/model.py and torchvision's resnet.py define them (torchvision
is not installed), and tools/reference/ports.py imports them for the reference
values of spec/port_*_spec.lua."""
import gzip
import math
import os
import sys
import time

import torch
from torch import nn
import torch.nn.functional as F

# ---- word_language_model/model.py's RNNModel ----


class RNNModel(nn.Module):
    def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.5, tie_weights=False):
        super().__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        if rnn_type in ("LSTM", "GRU"):
            self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
        else:
            nonlinearity = {"RNN_TANH": "tanh", "RNN_RELU": "relu"}[rnn_type]
            self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity=nonlinearity, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        if tie_weights:
            self.decoder.weight = self.encoder.weight
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)
        self.rnn_type, self.nhid, self.nlayers = rnn_type, nhid, nlayers

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output).view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        z = weight.new_zeros(self.nlayers, bsz, self.nhid)
        return (z, z.clone()) if self.rnn_type == "LSTM" else z


# ---- torchvision's resnet.py: BasicBlock and ResNet (resnet18) ----


def conv3x3(in_planes, out_planes, stride=1):
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=1, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class ResNet(nn.Module):
    def __init__(self, layers, num_classes=1000):
        super().__init__()
        self.inplanes = 64
        self.conv1 = nn.Conv2d(3, 64, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(64, layers[0])
        self.layer2 = self._make_layer(128, layers[1], stride=2)
        self.layer3 = self._make_layer(256, layers[2], stride=2)
        self.layer4 = self._make_layer(512, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def _make_layer(self, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes:
            downsample = nn.Sequential(nn.Conv2d(self.inplanes, planes, 1, stride=stride, bias=False),
                                       nn.BatchNorm2d(planes))
        layers = [BasicBlock(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes
        layers += [BasicBlock(planes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = self.avgpool(x)
        return self.fc(x.reshape(x.size(0), -1))


def resnet18(num_classes=1000):
    return ResNet([2, 2, 2, 2], num_classes)


def fashion_resnet18():
    """ResNet-18 for Fashion-MNIST as examples/resnet.lua makes it: 10 classes,
    a 1-channel stem."""
    model = resnet18(num_classes=10)
    model.conv1 = nn.Conv2d(1, 64, kernel_size=7, stride=2, padding=3, bias=False)
    return model


# ---- the benchmarks ----


def emit(name, value):
    print("%s\t%.6g" % (name, value), flush=True)


def tokenize(path, word2idx):
    ids = []
    with open(path, "r", encoding="utf8") as f:
        for line in f:
            for word in line.split() + ["<eos>"]:
                ids.append(word2idx.setdefault(word, len(word2idx)))
    return torch.tensor(ids, dtype=torch.int64)


def bench_lm(corpus_dir):
    """One epoch of main.py's LSTM model (its defaults: emsize = nhid = 200, 2
    layers, dropout 0.2, batch 20, bptt 35, lr 20, clip 0.25) on corpus_dir/train.txt."""
    torch.manual_seed(1111)
    word2idx = {}
    train = tokenize(os.path.join(corpus_dir, "train.txt"), word2idx)
    for split in ("valid", "test"):  # data.py's Corpus adds their words to the vocabulary too
        tokenize(os.path.join(corpus_dir, split + ".txt"), word2idx)
    ntokens, bsz, bptt, lr, clip = len(word2idx), 20, 35, 20.0, 0.25
    nbatch = train.size(0) // bsz
    data = train.narrow(0, 0, nbatch * bsz).view(bsz, -1).t().contiguous()
    model = RNNModel("LSTM", ntokens, 200, 200, 2, 0.2)
    criterion = nn.CrossEntropyLoss()
    model.train()
    hidden = model.init_hidden(bsz)
    t0, c0 = time.perf_counter(), time.process_time()
    batches, total = 0, 0.0
    for i in range(0, data.size(0) - 1, bptt):
        seq_len = min(bptt, len(data) - 1 - i)
        x, target = data[i:i + seq_len], data[i + 1:i + 1 + seq_len].reshape(-1)
        model.zero_grad()
        hidden = tuple(h.detach() for h in hidden)
        output, hidden = model(x, hidden)
        loss = criterion(output.view(-1, ntokens), target)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)
        total += loss.item()
        batches += 1
    epoch, cpu = time.perf_counter() - t0, time.process_time() - c0
    emit("epoch_s", epoch)
    emit("epoch_cpu_s", cpu)
    emit("ms_per_batch", 1000 * epoch / batches)
    emit("batches", batches)
    emit("mean_loss", total / batches)


def fashion_images(n):
    root = os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")
    with gzip.open(os.path.join(root, "train-images-idx3-ubyte.gz")) as f:
        images = f.read()
    with gzip.open(os.path.join(root, "train-labels-idx1-ubyte.gz")) as f:
        labels = f.read()
    x = torch.frombuffer(bytearray(images[16:16 + n * 784]), dtype=torch.uint8).float().div(255).view(n, 1, 28, 28)
    y = torch.frombuffer(bytearray(labels[8:8 + n]), dtype=torch.uint8).long()
    return x, y


def bench_resnet(steps, batch):
    """`steps` SGD steps (momentum 0.9, weight decay 5e-4, lr 0.1) of the
    Fashion-MNIST ResNet-18 on the first steps * batch training images, in order,
    normalised as examples/resnet.lua does."""
    torch.manual_seed(1)
    x, y = fashion_images(steps * batch)
    x = (x - 0.2860) / 0.3530
    model = fashion_resnet18()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    criterion = nn.CrossEntropyLoss()
    model.train()

    def step(k):
        xb, yb = x[k * batch:(k + 1) * batch], y[k * batch:(k + 1) * batch]
        opt.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        opt.step()
        return loss.item()

    step(0)  # warm-up (not timed)
    t0, c0 = time.perf_counter(), time.process_time()
    for k in range(1, steps):
        loss = step(k)
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    emit("steps_s", elapsed)
    emit("ms_per_step", 1000 * elapsed / (steps - 1))
    emit("cpu_ms_per_step", 1000 * cpu / (steps - 1))
    emit("images_per_s", (steps - 1) * batch / elapsed)
    emit("last_loss", loss)


if __name__ == "__main__":
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    what = sys.argv[2] if len(sys.argv) > 2 else "lm"
    torch.set_num_threads(threads)
    if what == "lm":
        bench_lm(sys.argv[3])
    elif what == "resnet":
        bench_resnet(int(os.environ.get("RESNET_STEPS", "21")), int(os.environ.get("RESNET_BATCH", "64")))
    else:
        sys.exit("ports_torch.py: what is lm or resnet")
