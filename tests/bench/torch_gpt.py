#!/usr/bin/python3
"""Peer baseline: dtsim's transformer (model.arch = gpt) trained with PyTorch on the CPU.

The plainest PyTorch training loop of the model `dtsim bench trainer --model gpt` trains,
for tests/bench/trainer.sh to set the two side by side: GPT-2's shape (token and position
embeddings, pre-norm blocks of causal multi-head self-attention and a GELU MLP of 4 x hidden,
a final layer norm, the output layer tied to the token embedding), GPT-2's initialisation,
byte tokens (vocabulary 256) of the same text cut the same way (its last floor(len/10) bytes
validate; every window of seq + 1 bytes, one starting at each byte, of the rest trains;
--limit keeps the first N), the same batch (the last batch of an epoch partial, as dtsim's),
plain SGD without momentum. With --eval-every-epoch the validation windows are evaluated
after each epoch (in batches), as `dtsim train` does, so that the two do the same work.
Prints one line:
  peer=torch model=gpt layers=L hidden=C heads=H seq=T epochs=E batch=B threads=N params=P
  train_s=S samples_per_s=R tokens_per_s=R*T val_loss=V val_next_token_acc=A

Usage: torch_gpt.py [--epochs 1] [--batch 64] [--layers 2] [--hidden 64] [--heads 4]
                    [--seq 64] [--lr 0.05] [--threads 1] [--limit N] [--eval-every-epoch]
                    [--text /usr/share/common-licenses/GPL-3]
Needs Debian's python3-torch (run it with /usr/bin/python3).
"""
import argparse
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, C, H, L):
        super().__init__()
        self.H = H
        self.ln_1 = nn.LayerNorm(C)
        self.qkv = nn.Linear(C, 3 * C)
        self.proj = nn.Linear(C, C)
        self.ln_2 = nn.LayerNorm(C)
        self.fc = nn.Linear(C, 4 * C)
        self.fc_proj = nn.Linear(4 * C, C)
        for lin in (self.qkv, self.fc):
            nn.init.normal_(lin.weight, std=0.02)
            nn.init.zeros_(lin.bias)
        for lin in (self.proj, self.fc_proj):  # the projections into the residual stream
            nn.init.normal_(lin.weight, std=0.02 / math.sqrt(2 * L))
            nn.init.zeros_(lin.bias)

    def forward(self, x, mask):
        B, T, C = x.shape
        hs = C // self.H
        q, k, v = self.qkv(self.ln_1(x)).split(C, dim=-1)
        q = q.view(B, T, self.H, hs).transpose(1, 2)
        k = k.view(B, T, self.H, hs).transpose(1, 2)
        v = v.view(B, T, self.H, hs).transpose(1, 2)
        s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
        s = s.masked_fill(mask[:T, :T], float("-inf"))
        y = (torch.softmax(s, dim=-1) @ v).transpose(1, 2).reshape(B, T, C)
        x = x + self.proj(y)
        return x + self.fc_proj(F.gelu(self.fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, V, T, C, H, L):
        super().__init__()
        self.wte = nn.Embedding(V, C)
        self.wpe = nn.Embedding(T, C)
        nn.init.normal_(self.wte.weight, std=0.02)
        nn.init.normal_(self.wpe.weight, std=0.02)
        self.blocks = nn.ModuleList([Block(C, H, L) for _ in range(L)])
        self.ln_f = nn.LayerNorm(C)
        self.register_buffer("mask", torch.ones(T, T, dtype=torch.bool).triu(1))

    def forward(self, idx):
        T = idx.shape[1]
        x = self.wte(idx) + self.wpe(torch.arange(T))
        for b in self.blocks:
            x = b(x, self.mask)
        return self.ln_f(x) @ self.wte.weight.t()  # tied output layer


def windows(data, seq):
    return data.unfold(0, seq + 1, 1).contiguous()  # (len - seq, seq + 1)


def evaluate(net, val, batch):
    loss = hits = 0.0
    with torch.no_grad():
        for i in range(0, val.shape[0], batch):
            w = val[i:i + batch]
            logits = net(w[:, :-1])
            loss += F.cross_entropy(logits.reshape(-1, 256), w[:, 1:].reshape(-1),
                                    reduction="sum").item()
            hits += (logits.argmax(-1) == w[:, 1:]).sum().item()
    tokens = val.shape[0] * (val.shape[1] - 1)
    return loss / tokens, hits / tokens


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--eval-every-epoch", action="store_true")
    ap.add_argument("--text", default="/usr/share/common-licenses/GPL-3")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    with open(a.text, "rb") as f:
        raw = torch.tensor(list(f.read()), dtype=torch.long)
    cut = len(raw) - len(raw) // 10
    train, val = windows(raw[:cut], a.seq), windows(raw[cut:], a.seq)
    if a.limit:
        train = train[:a.limit]
    net = GPT(256, a.seq, a.hidden, a.heads, a.layers)
    opt = torch.optim.SGD(net.parameters(), lr=a.lr)
    n = train.shape[0]
    t0 = time.perf_counter()
    for _ in range(a.epochs):
        perm = torch.randperm(n)
        for i in range(0, n, a.batch):
            w = train[perm[i:i + a.batch]]
            opt.zero_grad(set_to_none=True)
            logits = net(w[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, 256), w[:, 1:].reshape(-1))
            loss.backward()
            opt.step()
        if a.eval_every_epoch:
            evaluate(net, val, a.batch)
    train_s = time.perf_counter() - t0
    vl, acc = evaluate(net, val, a.batch)
    params = sum(p.numel() for p in net.parameters())
    seen = a.epochs * n
    print(f"peer=torch model=gpt layers={a.layers} hidden={a.hidden} heads={a.heads} "
          f"seq={a.seq} epochs={a.epochs} batch={a.batch} threads={a.threads} params={params} "
          f"train_s={train_s:.3f} samples_per_s={seen / train_s:.0f} "
          f"tokens_per_s={seen * a.seq / train_s:.0f} val_loss={vl:.4f} "
          f"val_next_token_acc={acc:.4f}")


if __name__ == "__main__":
    main()
