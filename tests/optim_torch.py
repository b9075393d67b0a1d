#!/usr/bin/env python3
"""PyTorch's optimizers on dtsim's mlp, for tests/test_optim.c.

usage: optim_torch.py IN OUT

IN (little-endian): int32 D (dense layers), then D x int32 (in, out, w_off, b_off) in the
flat parameter buffer's layout (trainer/model.h: weights (out, in) as PyTorch's); int32
n_params, kind (0 sgd, 1 adam, 2 adamw), steps, batch; float64 lr, momentum, weight_decay,
beta1, beta2, eps, clip_norm; the initial parameters (float32); then per step its batch:
batch x in float32 inputs, batch int32 labels. OUT: the parameters after the steps (float32).
Every step is what a PyTorch user writes, in float32: the mlp (ReLU between dense layers),
cross_entropy's mean, backward, torch.nn.utils.clip_grad_norm_ when clip_norm > 0, then
torch.optim.SGD, Adam or AdamW's step: a second implementation to compare the C code against.
"""
import struct
import sys

import torch
import torch.nn.functional as F


def main():
    if len(sys.argv) != 3:
        sys.stderr.write("usage: optim_torch.py IN OUT\n")
        return 2
    with open(sys.argv[1], "rb") as f:
        raw = f.read()
    off = 0
    (D,) = struct.unpack_from("<i", raw, off)
    off += 4
    layers = []
    for _ in range(D):
        layers.append(struct.unpack_from("<4i", raw, off))
        off += 16
    n, kind, steps, batch = struct.unpack_from("<4i", raw, off)
    off += 16
    lr, momentum, wd, beta1, beta2, eps, clip = struct.unpack_from("<7d", raw, off)
    off += 56
    flat = torch.frombuffer(bytearray(raw[off:off + 4 * n]), dtype=torch.float32).clone()
    off += 4 * n
    params = []
    for (i, o, w_off, b_off) in layers:
        w = flat[w_off:w_off + o * i].view(o, i).clone().requires_grad_(True)
        b = flat[b_off:b_off + o].clone().requires_grad_(True)
        params.append((w, b))
    plist = [t for pair in params for t in pair]
    if kind == 0:
        opt = torch.optim.SGD(plist, lr=lr, momentum=momentum, weight_decay=wd)
    elif kind == 1:
        opt = torch.optim.Adam(plist, lr=lr, betas=(beta1, beta2), eps=eps, weight_decay=wd)
    else:
        opt = torch.optim.AdamW(plist, lr=lr, betas=(beta1, beta2), eps=eps, weight_decay=wd)
    dim = layers[0][0]
    for _ in range(steps):
        x = torch.frombuffer(bytearray(raw[off:off + 4 * batch * dim]),
                             dtype=torch.float32).view(batch, dim)
        off += 4 * batch * dim
        y = torch.frombuffer(bytearray(raw[off:off + 4 * batch]), dtype=torch.int32).long()
        off += 4 * batch
        h = x
        for k, (w, b) in enumerate(params):
            h = F.linear(h, w, b)
            if k + 1 < len(params):
                h = F.relu(h)
        loss = F.cross_entropy(h, y)
        opt.zero_grad()
        loss.backward()
        if clip > 0:
            torch.nn.utils.clip_grad_norm_(plist, clip)
        opt.step()
    out = flat.clone()
    for (i, o, w_off, b_off), (w, b) in zip(layers, params):
        out[w_off:w_off + o * i] = w.detach().reshape(-1)
        out[b_off:b_off + o] = b.detach()
    with open(sys.argv[2], "wb") as f:
        f.write(out.numpy().tobytes())
    return 0


if __name__ == "__main__":
    sys.exit(main())
