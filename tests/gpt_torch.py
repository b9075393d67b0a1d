#!/usr/bin/env python3
"""PyTorch's numbers for dtsim's transformer (model.arch = gpt), for tests/test_gpt.c.

usage: gpt_torch.py IN OUT

IN (little-endian): six int32 L C NH T V B, then the flat parameter buffer (float32, the
layout of trainer/gpt.h), then B windows of T + 1 token ids (int32). OUT: the logits
(B, T, V), the mean token loss and the gradient of that loss with respect to every
parameter, all float64, computed in float64 by torch's own layers (layer_norm, linear,
GELU with the tanh approximation, a causal softmax attention, cross_entropy) from the same
weights: a second implementation to compare the C code against.
"""
import struct
import sys

import torch
import torch.nn.functional as F


def main():
    if len(sys.argv) != 3:
        sys.stderr.write("usage: gpt_torch.py IN OUT\n")
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
    assert pos[0] == n

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
    loss.backward()

    with open(sys.argv[2], "wb") as f:
        f.write(struct.pack("<%dd" % (B * T * V), *logits.detach().reshape(-1).tolist()))
        f.write(struct.pack("<d", loss.item()))
        f.write(struct.pack("<%dd" % n, *p.grad.tolist()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
