#!/usr/bin/python3
"""Peer baseline for tests/bench/fedscale.sh: FedAvg as the plainest PyTorch loop.

The same work per round as dtsim's fedavg over a large population: the training set split
over CLIENTS clients by a Dirichlet(ALPHA) draw per class (numpy's, so not dtsim's clients
but the same distribution of sizes), SAMPLED clients drawn each round among those holding
data, each trained from the global model for one local epoch of batch B with a fresh SGD
optimizer (lr, no momentum), and the global model replaced by the average of their models
weighted by their sample counts. The mlp is ../shared/peers/torch_mlp.py's. Prints:
  peer=torch clients=N holders=H sampled=M rounds=R client_steps=S train_s=T cpu_s=C
  client_steps_per_s=X client_steps_per_cpu_s=Z test_acc=A
(train_s: the rounds' wall time; cpu_s: this process's CPU time in them, every thread's,
which other work on a shared machine does not inflate.)

Usage: torch_fedavg.py [--clients 100000] [--sampled 1000] [--alpha 0.3] [--rounds 5]
       [--batch 10] [--lr 0.05] [--hidden 256,128] [--threads 1] [--seed 1]
Data is read from /usr/share/datasets/fashion-mnist (IDX, gzip).
"""
import argparse, gzip, struct, time
import numpy as np
import torch

DATA = "/usr/share/datasets/fashion-mnist"


def idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = struct.unpack(">" + "I" * ndim, raw[4:4 + 4 * ndim])
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load(split):
    x = idx(f"{DATA}/{split}-images-idx3-ubyte.gz").reshape(-1, 784).astype(np.float32) / 255.0
    y = idx(f"{DATA}/{split}-labels-idx1-ubyte.gz").astype(np.int64)
    return torch.from_numpy(x), torch.from_numpy(y)


def dirichlet_split(labels, clients, alpha, rng):
    """Per class, proportions over the clients from Dirichlet(alpha), the class's shuffled
    samples cut at their cumulative sums: a list of index arrays, one per client."""
    parts = [[] for _ in range(clients)]
    for k in np.unique(labels):
        members = rng.permutation(np.flatnonzero(labels == k))
        cuts = (np.cumsum(rng.dirichlet(np.full(clients, alpha))) * len(members)).astype(int)
        for c, chunk in enumerate(np.split(members, np.minimum(cuts[:-1], len(members)))):
            if len(chunk):
                parts[c].append(chunk)
    return [np.sort(np.concatenate(p)) if p else np.empty(0, np.int64) for p in parts]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", type=int, default=100000)
    ap.add_argument("--sampled", type=int, default=1000)
    ap.add_argument("--alpha", type=float, default=0.3)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--batch", type=int, default=10)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--hidden", default="256,128")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    rng = np.random.default_rng(a.seed)
    xtr, ytr = load("train")
    xte, yte = load("t10k")
    parts = dirichlet_split(ytr.numpy(), a.clients, a.alpha, rng)
    holders = np.array([c for c, p in enumerate(parts) if len(p)])
    parts = [torch.from_numpy(p) for p in parts]
    sizes = [784] + [int(h) for h in a.hidden.split(",") if h] + [10]
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(torch.nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            layers.append(torch.nn.ReLU())
    net = torch.nn.Sequential(*layers)
    lossf = torch.nn.CrossEntropyLoss()
    glob = [p.detach().clone() for p in net.parameters()]
    acc = [torch.zeros_like(p) for p in glob]
    steps = 0
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(a.rounds):
        chosen = rng.choice(holders, size=min(a.sampled, len(holders)), replace=False)
        total = 0
        for s in acc:
            s.zero_()
        for c in chosen:
            mine = parts[c]
            with torch.no_grad():
                for p, g in zip(net.parameters(), glob):
                    p.copy_(g)
            opt = torch.optim.SGD(net.parameters(), lr=a.lr)
            perm = mine[torch.randperm(len(mine))]
            for i in range(0, len(perm), a.batch):
                b = perm[i:i + a.batch]
                opt.zero_grad(set_to_none=True)
                lossf(net(xtr[b]), ytr[b]).backward()
                opt.step()
                steps += 1
            with torch.no_grad():
                for s, p in zip(acc, net.parameters()):
                    s.add_(p, alpha=float(len(mine)))
            total += len(mine)
        with torch.no_grad():
            for g, s in zip(glob, acc):
                torch.div(s, total, out=g)
    train_s, cpu_s = time.perf_counter() - t0, time.process_time() - c0
    with torch.no_grad():
        for p, g in zip(net.parameters(), glob):
            p.copy_(g)
        test_acc = (net(xte).argmax(1) == yte).float().mean().item()
    print(f"peer=torch clients={a.clients} holders={len(holders)} sampled={a.sampled} "
          f"rounds={a.rounds} client_steps={steps} train_s={train_s:.3f} cpu_s={cpu_s:.3f} "
          f"client_steps_per_s={steps / train_s:.0f} "
          f"client_steps_per_cpu_s={steps / cpu_s:.0f} test_acc={test_acc:.4f}")


if __name__ == "__main__":
    main()
