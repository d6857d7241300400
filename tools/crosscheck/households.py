#!/usr/bin/env python3
"""An independent check, in plain PyTorch, of a dpstudy finding (docs/analysis.md,
"Households"): with heavy-ball momentum, two households holding different classes
and averaged with each other only every H steps give an averaged model whose test
accuracy alternates from one world period to the next; plain SGD does not.

Nothing of dpstudy is used: 8 MLPs (784-512-512-10, PyTorch's initialisation, all
from one start), Fashion-MNIST sorted by label and cut in two halves (workers 0-3
draw from the first, 4-7 from the second), batches of 16 drawn with replacement,
torch.optim.SGD, parameters averaged within each household every step and over
all 8 every H steps, the mean of the 8 models evaluated every 10 steps. One epoch
(468 steps). The samplers differ from dpstudy's, so the numbers do too; the shape
is what is compared.

usage: households.py H MOMENTUM LR [SEED]      e.g. 120 0.9 0.02, then 120 0 0.2
prints step:accuracy % pairs. About 20 s on 2 cores. Needs Debian's python3-torch
and dataset-fashion-mnist.
"""
import gzip
import sys

import numpy as np
import torch

DATA = "/usr/share/datasets/fashion-mnist/"
WORKERS, HOUSEHOLD, BATCH = 8, 4, 16


def idx(name, header):
    with gzip.open(DATA + name) as f:
        return np.frombuffer(f.read(), np.uint8, offset=header)


def images(name):
    x = torch.tensor(idx(name, 16).reshape(-1, 784), dtype=torch.float32) / 255
    return (x - 0.2860) / 0.3530  # the published Fashion-MNIST mean and sd, as dpstudy uses


def mlp():
    return torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512), torch.nn.ReLU(),
                               torch.nn.Linear(512, 10))


def average(models):
    with torch.no_grad():
        for params in zip(*[m.parameters() for m in models]):
            mean = torch.stack(params).mean(0)
            for p in params:
                p.copy_(mean)


def mean_of(models):
    mean_model = mlp()
    with torch.no_grad():
        for target, *params in zip(mean_model.parameters(), *[m.parameters() for m in models]):
            target.copy_(torch.stack(params).mean(0))
    return mean_model


def main():
    period, momentum, lr = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
    torch.manual_seed(int(sys.argv[4]) if len(sys.argv) > 4 else 1)
    torch.set_num_threads(2)
    x, y = images("train-images-idx3-ubyte.gz"), torch.tensor(idx("train-labels-idx1-ubyte.gz", 8).astype(np.int64))
    xt, yt = images("t10k-images-idx3-ubyte.gz"), torch.tensor(idx("t10k-labels-idx1-ubyte.gz", 8).astype(np.int64))
    order = torch.argsort(y, stable=True)
    shards = [order[:len(order) // 2], order[len(order) // 2:]]
    start = mlp()
    models = [mlp() for _ in range(WORKERS)]
    for m in models:
        m.load_state_dict(start.state_dict())
    optimisers = [torch.optim.SGD(m.parameters(), lr=lr, momentum=momentum) for m in models]
    steps, out = len(y) // (WORKERS * BATCH), []
    for step in range(1, steps + 1):
        for w, (m, o) in enumerate(zip(models, optimisers)):
            shard = shards[w // HOUSEHOLD]
            batch = shard[torch.randint(len(shard), (BATCH,))]
            o.zero_grad()
            torch.nn.functional.cross_entropy(m(x[batch]), y[batch]).backward()
            o.step()
        if step % period == 0:
            average(models)
        else:
            average(models[:HOUSEHOLD])
            average(models[HOUSEHOLD:])
        if step % 10 == 0 or step == steps:
            with torch.no_grad():
                accuracy = (mean_of(models)(xt).argmax(1) == yt).float().mean().item()
            out.append(f"{step}:{accuracy * 100:.0f}")
    print(" ".join(out))


if __name__ == "__main__":
    main()
