#!/usr/bin/env python3
"""PyTorch's numbers for dtsim's transformer (model.arch = gpt), for tests/test_gpt.c.

usage: gpt_torch.py IN OUT
       gpt_torch.py train IN OUT

IN (little-endian): six int32 L C NH T V B, then the flat parameter buffer (float32, the
layout of trainer/gpt.h), then B windows of T + 1 token ids (int32). OUT: the logits
(B, T, V), the mean token loss and the gradient of that loss with respect to every
parameter, all float64, computed in float64 by torch's own layers (layer_norm, linear,
GELU with the tanh approximation, a causal softmax attention, cross_entropy) from the same
weights: a second implementation to compare the C code against.

train: training as a PyTorch user writes it, in float32. IN: six int32 L C NH T V B, four
int32 kind (0 sgd, 1 adam, 2 adamw), steps, warmup, schedule (0 constant, 1 cosine, 2
linear), seven float64 lr, lr_min, momentum, weight_decay, beta1, beta2, eps, clip_norm (eight
in all), the initial parameters (float32), then per step B windows of T + 1 token ids
(int32). Each step: the mean token loss, backward, torch.nn.utils.clip_grad_norm_ when
clip_norm > 0, the optimizer's step (torch.optim.SGD, Adam or AdamW) at the rate a LambdaLR
gives (linear warmup, then the schedule). OUT: the parameters after the steps, trained in
float32, then trained in float64 (float64 both): the second says how far float32's rounding
alone carries the first.
"""
import math
import struct
import sys

import torch
import torch.nn.functional as F


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "train":
        with open(sys.argv[2], "rb") as f:
            raw = f.read()
        with open(sys.argv[3], "wb") as f:
            f.write(train(raw, torch.float32))
            f.write(train(raw, torch.float64))
        return 0
    if len(sys.argv) != 3:
        sys.stderr.write("usage: gpt_torch.py IN OUT | gpt_torch.py train IN OUT\n")
        return 2
    with open(sys.argv[1], "rb") as f:
        raw = f.read()
    L, C, NH, T, V, B = struct.unpack_from("<6i", raw, 0)
    n = V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C
    off = 24
    flat = torch.frombuffer(bytearray(raw[off:off + 4 * n]), dtype=torch.float32)
    off += 4 * n
    tok = torch.frombuffer(bytearray(raw[off:off + 4 * B * (T + 1)]), dtype=torch.int32)
    tok = tok.reshape(B, T + 1).long()
    p = flat.double().clone().requires_grad_(True)
    logits, loss = model(p, tok, L, C, NH, T, V, B)
    loss.backward()

    with open(sys.argv[2], "wb") as f:
        f.write(struct.pack("<%dd" % (B * T * V), *logits.detach().reshape(-1).tolist()))
        f.write(struct.pack("<d", loss.item()))
        f.write(struct.pack("<%dd" % n, *p.grad.tolist()))
    return 0


def model(p, tok, L, C, NH, T, V, B):
    """The logits and the mean token loss of windows tok (B, T + 1) under the flat
    parameters p, as trainer/gpt.c computes them."""
    pos = [0]

    def take(*shape):
        size = 1
        for s in shape:
            size *= s
        t = p[pos[0]:pos[0] + size].view(*shape)
        pos[0] += size
        return t

    wte, wpe = take(V, C), take(T, C)
    blocks = []
    for _ in range(L):
        blocks.append(dict(ln1w=take(C), ln1b=take(C), qkvw=take(3 * C, C), qkvb=take(3 * C),
                           projw=take(C, C), projb=take(C), ln2w=take(C), ln2b=take(C),
                           fcw=take(4 * C, C), fcb=take(4 * C), fcprojw=take(C, 4 * C),
                           fcprojb=take(C)))
    lnfw, lnfb = take(C), take(C)
    assert pos[0] == p.numel()

    inputs, targets = tok[:, :T], tok[:, 1:]
    x = wte[inputs] + wpe[torch.arange(T)]
    hs = C // NH
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    for b in blocks:
        h = F.layer_norm(x, (C,), b["ln1w"], b["ln1b"], eps=1e-5)
        q, k, v = F.linear(h, b["qkvw"], b["qkvb"]).split(C, dim=-1)
        q = q.view(B, T, NH, hs).transpose(1, 2)
        k = k.view(B, T, NH, hs).transpose(1, 2)
        v = v.view(B, T, NH, hs).transpose(1, 2)
        s = (q @ k.transpose(-2, -1)) / (hs ** 0.5)
        s = s.masked_fill(~mask, float("-inf"))
        y = (torch.softmax(s, dim=-1) @ v).transpose(1, 2).reshape(B, T, C)
        x = x + F.linear(y, b["projw"], b["projb"])
        h = F.layer_norm(x, (C,), b["ln2w"], b["ln2b"], eps=1e-5)
        h = F.gelu(F.linear(h, b["fcw"], b["fcb"]), approximate="tanh")
        x = x + F.linear(h, b["fcprojw"], b["fcprojb"])
    x = F.layer_norm(x, (C,), lnfw, lnfb, eps=1e-5)
    logits = x @ wte.t()
    loss = F.cross_entropy(logits.reshape(B * T, V), targets.reshape(B * T))
    return logits, loss


def lr_at(base, lr_min, warmup, schedule, step, total):
    """trainer_lr_at (trainer/train.c): the rate at 0-based step `step` of `total`."""
    if step < warmup:
        return base * (step + 1) / warmup
    if schedule == 0:
        return base
    progress = (step - warmup) / (total - warmup) if total > warmup else 1.0
    progress = min(max(progress, 0.0), 1.0)
    if schedule == 2:
        return base - (base - lr_min) * progress
    return lr_min + 0.5 * (base - lr_min) * (1.0 + math.cos(math.pi * progress))


def train(raw, dtype):
    """The parameters after the steps, trained in dtype."""
    L, C, NH, T, V, B = struct.unpack_from("<6i", raw, 0)
    kind, steps, warmup, schedule = struct.unpack_from("<4i", raw, 24)
    lr, lr_min, momentum, wd, beta1, beta2, eps, clip = struct.unpack_from("<8d", raw, 40)
    off = 104
    n = V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C
    p = torch.frombuffer(bytearray(raw[off:off + 4 * n]), dtype=torch.float32).to(dtype)
    p.requires_grad_(True)
    off += 4 * n
    if kind == 0:
        opt = torch.optim.SGD([p], lr=lr, momentum=momentum, weight_decay=wd)
    elif kind == 1:
        opt = torch.optim.Adam([p], lr=lr, betas=(beta1, beta2), eps=eps, weight_decay=wd)
    else:
        opt = torch.optim.AdamW([p], lr=lr, betas=(beta1, beta2), eps=eps, weight_decay=wd)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: lr_at(lr, lr_min, warmup, schedule, s, steps) / lr)
    for _ in range(steps):
        tok = torch.frombuffer(bytearray(raw[off:off + 4 * B * (T + 1)]), dtype=torch.int32)
        off += 4 * B * (T + 1)
        opt.zero_grad()
        _, loss = model(p, tok.reshape(B, T + 1).long(), L, C, NH, T, V, B)
        loss.backward()
        if clip > 0:
            torch.nn.utils.clip_grad_norm_([p], clip)
        opt.step()
        sched.step()
    return p.detach().numpy().astype("<f8").tobytes()


if __name__ == "__main__":
    sys.exit(main())
