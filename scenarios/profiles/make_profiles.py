#!/usr/bin/env python3
"""Writes the built-in model profiles (timing-only models, model.arch = profile:NAME).

Each architecture is laid out layer by layer as its reference implementation builds it
(torchvision for the CNNs, Hugging Face transformers for BERT and GPT-2); the parameter
totals are checked against the published counts below, so a slip in a layer fails here.

FLOP convention (per sample): a convolution or matrix product counts 2 FLOPs per
multiply-add; batch and layer normalisation count 4 per output element, attention's
softmax 5 per score; pooling, ReLU, GELU and residual additions are not counted. The
backward pass of a layer with parameters costs twice its forward pass (input gradient and
weight gradient), except the first layer, which needs no input gradient (1x).

Activations (the [forward] section): each layer's output elements per sample, what it keeps
for the backward pass (attention: its probabilities, heads x T x T, and its output); and the
cuts where a pipeline stage may end: between residual blocks, inception modules,
transformer layers and VGG's layers, with the elements that cross there (after pooling
where a pool follows).

Tensor parallelism (the [tensor] section, transformers only): Megatron-LM's split of each
layer (token embedding by vocabulary, QKV and the MLP's first projection and the output
layer by columns, the attention core by heads, attention output and the MLP's second
projection by rows; norms and positions replicated) and the all-reduce it needs, T x H
elements per sample. Usage:
    python3 scenarios/profiles/make_profiles.py    (rewrites scenarios/profiles/*.ini)
"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))


class Net:
    def __init__(self):
        self.layers = []  # [name, params, forward flops, output elements, cut elements,
        #                    tensor split, its all-reduced elements]

    def add(self, name, params, flops, outputs):
        self.layers.append([name, params, flops, outputs, 0, None, 0])

    def split(self, kind, reduce=0):
        """How Megatron-LM splits the last layer added across a tensor group: column, row,
        heads or vocab, all-reducing reduce elements per sample (row, vocab: its output;
        column: its input gradient)."""
        self.layers[-1][5:7] = [kind, reduce]

    def cut(self, elements):
        """A pipeline stage may end after the last layer added, sending elements."""
        self.layers[-1][4] = elements

    def conv(self, name, cin, cout, k, h, w, stride=1, pad=None, bias=False, bn=True):
        """k is an int or (kh, kw); returns the output size."""
        kh, kw = (k, k) if isinstance(k, int) else k
        ph, pw = ((kh - 1) // 2, (kw - 1) // 2) if pad is None else pad
        oh, ow = (h + 2 * ph - kh) // stride + 1, (w + 2 * pw - kw) // stride + 1
        self.add(name, cout * cin * kh * kw + (cout if bias else 0), 2 * cout * oh * ow * cin * kh * kw,
                 cout * oh * ow)
        if bn:
            self.add(name + ".bn", 2 * cout, 4 * cout * oh * ow, cout * oh * ow)
        return oh, ow

    def linear(self, name, fin, fout, tokens=1, bias=True):
        self.add(name, fin * fout + (fout if bias else 0), 2 * tokens * fin * fout, tokens * fout)


def pool(h, k, s, pad=0):
    return (h + 2 * pad - k) // s + 1


def resnet(blocks):
    n = Net()
    h, w = n.conv("conv1", 3, 64, 7, 224, 224, stride=2, pad=(3, 3))
    h = w = pool(h, 3, 2, 1)
    n.cut(64 * h * w)
    cin = 64
    for stage, (planes, count) in enumerate(zip((64, 128, 256, 512), blocks)):
        for b in range(count):
            stride = 2 if stage > 0 and b == 0 else 1
            p = "layer%d.%d" % (stage + 1, b)
            n.conv(p + ".conv1", cin, planes, 1, h, w)
            oh, ow = n.conv(p + ".conv2", planes, planes, 3, h, w, stride=stride)
            n.conv(p + ".conv3", planes, planes * 4, 1, oh, ow)
            if b == 0:
                n.conv(p + ".downsample", cin, planes * 4, 1, h, w, stride=stride, pad=(0, 0))
            h, w, cin = oh, ow, planes * 4
            n.cut(cin * h * w)
    n.linear("fc", 2048, 1000)
    return n


def vgg16():
    n = Net()
    h = w = 224
    cin, i = 3, 0
    for v in (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"):
        if v == "M":
            h, w = h // 2, w // 2
        else:
            n.conv("features.%d" % i, cin, v, 3, h, w, bias=True, bn=False)
            cin = v
            i += 1  # its ReLU
        n.cut(cin * h * w)
        i += 1
    n.linear("classifier.0", 512 * 7 * 7, 4096)
    n.cut(4096)
    n.linear("classifier.3", 4096, 4096)
    n.cut(4096)
    n.linear("classifier.6", 4096, 1000)
    return n


def inception_v3():
    n = Net()
    h = w = 299
    h, w = n.conv("Conv2d_1a_3x3", 3, 32, 3, h, w, stride=2, pad=(0, 0))
    n.cut(32 * h * w)
    h, w = n.conv("Conv2d_2a_3x3", 32, 32, 3, h, w, pad=(0, 0))
    n.cut(32 * h * w)
    h, w = n.conv("Conv2d_2b_3x3", 32, 64, 3, h, w)
    h = w = pool(h, 3, 2)
    n.cut(64 * h * w)
    h, w = n.conv("Conv2d_3b_1x1", 64, 80, 1, h, w)
    n.cut(80 * h * w)
    h, w = n.conv("Conv2d_4a_3x3", 80, 192, 3, h, w, pad=(0, 0))
    h = w = pool(h, 3, 2)
    n.cut(192 * h * w)

    def block_a(p, cin, pf):
        n.conv(p + ".branch1x1", cin, 64, 1, h, w)
        n.conv(p + ".branch5x5_1", cin, 48, 1, h, w)
        n.conv(p + ".branch5x5_2", 48, 64, 5, h, w)
        n.conv(p + ".branch3x3dbl_1", cin, 64, 1, h, w)
        n.conv(p + ".branch3x3dbl_2", 64, 96, 3, h, w)
        n.conv(p + ".branch3x3dbl_3", 96, 96, 3, h, w)
        n.conv(p + ".branch_pool", cin, pf, 1, h, w)
        n.cut((64 + 64 + 96 + pf) * h * w)
        return 64 + 64 + 96 + pf

    cin = block_a("Mixed_5b", 192, 32)
    cin = block_a("Mixed_5c", cin, 64)
    cin = block_a("Mixed_5d", cin, 64)
    # Mixed_6a (B): 35 -> 17
    oh, ow = n.conv("Mixed_6a.branch3x3", cin, 384, 3, h, w, stride=2, pad=(0, 0))
    n.conv("Mixed_6a.branch3x3dbl_1", cin, 64, 1, h, w)
    n.conv("Mixed_6a.branch3x3dbl_2", 64, 96, 3, h, w)
    n.conv("Mixed_6a.branch3x3dbl_3", 96, 96, 3, h, w, stride=2, pad=(0, 0))
    h, w, cin = oh, ow, 384 + 96 + cin
    n.cut(cin * h * w)
    for p, c7 in (("Mixed_6b", 128), ("Mixed_6c", 160), ("Mixed_6d", 160), ("Mixed_6e", 192)):
        n.conv(p + ".branch1x1", cin, 192, 1, h, w)
        n.conv(p + ".branch7x7_1", cin, c7, 1, h, w)
        n.conv(p + ".branch7x7_2", c7, c7, (1, 7), h, w)
        n.conv(p + ".branch7x7_3", c7, 192, (7, 1), h, w)
        n.conv(p + ".branch7x7dbl_1", cin, c7, 1, h, w)
        n.conv(p + ".branch7x7dbl_2", c7, c7, (7, 1), h, w)
        n.conv(p + ".branch7x7dbl_3", c7, c7, (1, 7), h, w)
        n.conv(p + ".branch7x7dbl_4", c7, c7, (7, 1), h, w)
        n.conv(p + ".branch7x7dbl_5", c7, 192, (1, 7), h, w)
        n.conv(p + ".branch_pool", cin, 192, 1, h, w)
        n.cut(cin * h * w)  # 4 x 192 channels: cin is 768 already
    # Mixed_7a (D): 17 -> 8
    n.conv("Mixed_7a.branch3x3_1", cin, 192, 1, h, w)
    oh, ow = n.conv("Mixed_7a.branch3x3_2", 192, 320, 3, h, w, stride=2, pad=(0, 0))
    n.conv("Mixed_7a.branch7x7x3_1", cin, 192, 1, h, w)
    n.conv("Mixed_7a.branch7x7x3_2", 192, 192, (1, 7), h, w)
    n.conv("Mixed_7a.branch7x7x3_3", 192, 192, (7, 1), h, w)
    n.conv("Mixed_7a.branch7x7x3_4", 192, 192, 3, h, w, stride=2, pad=(0, 0))
    h, w, cin = oh, ow, 320 + 192 + cin
    n.cut(cin * h * w)
    for p in ("Mixed_7b", "Mixed_7c"):
        n.conv(p + ".branch1x1", cin, 320, 1, h, w)
        n.conv(p + ".branch3x3_1", cin, 384, 1, h, w)
        n.conv(p + ".branch3x3_2a", 384, 384, (1, 3), h, w)
        n.conv(p + ".branch3x3_2b", 384, 384, (3, 1), h, w)
        n.conv(p + ".branch3x3dbl_1", cin, 448, 1, h, w)
        n.conv(p + ".branch3x3dbl_2", 448, 384, 3, h, w)
        n.conv(p + ".branch3x3dbl_3a", 384, 384, (1, 3), h, w)
        n.conv(p + ".branch3x3dbl_3b", 384, 384, (3, 1), h, w)
        n.conv(p + ".branch_pool", cin, 192, 1, h, w)
        cin = 320 + 768 + 768 + 192
        n.cut(cin * h * w)
    n.linear("fc", 2048, 1000)
    return n


def bert_large(seq=128):
    d, ff, vocab, layers, heads = 1024, 4096, 30522, 24, 16
    n = Net()
    n.add("embeddings.word", vocab * d, 0, seq * d)
    n.split("vocab", seq * d)
    n.add("embeddings.position", 512 * d, 0, seq * d)
    n.add("embeddings.token_type", 2 * d, 0, seq * d)
    n.add("embeddings.LayerNorm", 2 * d, 4 * seq * d, seq * d)
    n.cut(seq * d)
    for i in range(layers):
        p = "encoder.layer.%d" % i
        n.linear(p + ".attention.qkv", d, 3 * d, seq)
        n.split("column", seq * d)
        n.add(p + ".attention.scores", 0, 2 * 2 * seq * seq * d + 5 * heads * seq * seq,
              heads * seq * seq + seq * d)
        n.split("heads")
        n.linear(p + ".attention.output", d, d, seq)
        n.split("row", seq * d)
        n.add(p + ".attention.LayerNorm", 2 * d, 4 * seq * d, seq * d)
        n.linear(p + ".intermediate", d, ff, seq)
        n.split("column", seq * d)
        n.linear(p + ".output", ff, d, seq)
        n.split("row", seq * d)
        n.add(p + ".output.LayerNorm", 2 * d, 4 * seq * d, seq * d)
        n.cut(seq * d)
    n.linear("pooler", d, d)
    return n


def gpt2_xl(seq=1024):
    d, vocab, layers, heads = 1600, 50257, 48, 25
    n = Net()
    n.add("wte", vocab * d, 0, seq * d)
    n.split("vocab", seq * d)
    n.add("wpe", seq * d, 0, seq * d)
    n.cut(seq * d)
    for i in range(layers):
        p = "h.%d" % i
        n.add(p + ".ln_1", 2 * d, 4 * seq * d, seq * d)
        n.linear(p + ".attn.c_attn", d, 3 * d, seq)
        n.split("column", seq * d)
        n.add(p + ".attn.scores", 0, 2 * 2 * seq * seq * d + 5 * heads * seq * seq,
              heads * seq * seq + seq * d)
        n.split("heads")
        n.linear(p + ".attn.c_proj", d, d, seq)
        n.split("row", seq * d)
        n.add(p + ".ln_2", 2 * d, 4 * seq * d, seq * d)
        n.linear(p + ".mlp.c_fc", d, 4 * d, seq)
        n.split("column", seq * d)
        n.linear(p + ".mlp.c_proj", 4 * d, d, seq)
        n.split("row", seq * d)
        n.cut(seq * d)
    n.add("ln_f", 2 * d, 4 * seq * d, seq * d)
    n.cut(seq * d)
    n.add("lm_head", 0, 2 * seq * d * vocab, seq * vocab)  # tied to wte: its gradient lands in wte's
    n.split("column", seq * d)
    return n


PROFILES = [
    ("resnet50", lambda: resnet((3, 4, 6, 3)), 25557032, "3x224x224 image (ImageNet)",
     "He et al., Deep Residual Learning for Image Recognition, CVPR 2016; layout and "
     "parameter count of torchvision.models.resnet50 (25,557,032)"),
    ("resnet101", lambda: resnet((3, 4, 23, 3)), 44549160, "3x224x224 image (ImageNet)",
     "He et al., CVPR 2016; layout and parameter count of torchvision.models.resnet101 "
     "(44,549,160)"),
    ("inception_v3", inception_v3, 27161264 - 3326696, "3x299x299 image (ImageNet)",
     "Szegedy et al., Rethinking the Inception Architecture, CVPR 2016; "
     "torchvision.models.inception_v3 less its auxiliary classifier (27,161,264 - 3,326,696)"),
    ("vgg16", vgg16, 138357544, "3x224x224 image (ImageNet)",
     "Simonyan and Zisserman, Very Deep Convolutional Networks, ICLR 2015; layout and "
     "parameter count of torchvision.models.vgg16 (138,357,544)"),
    ("bert_large", bert_large, 335141888, "a sequence of 128 tokens",
     "Devlin et al., BERT, NAACL 2019; Hugging Face bert-large-uncased BertModel with its "
     "pooler (335,141,888), sequence length 128 as in pre-training phase 1"),
    ("gpt2_xl", gpt2_xl, 1557611200, "a sequence of 1024 tokens",
     "Radford et al., Language Models are Unsupervised Multitask Learners, 2019; Hugging "
     "Face gpt2-xl (1,557,611,200, output layer tied to the token embedding), context 1024"),
]


def profile_text(name, net, sample, source, header):
    """The profile file of net: header (comment lines, each starting with '#'), then its
    [profile], [backward] and [forward] sections, and [tensor] when it marks splits. Returns
    the text and the totals."""
    params = sum(l[1] for l in net.layers)
    first = next(i for i, l in enumerate(net.layers) if l[1] > 0)
    back = [(l[0], l[1], l[2] * (1 if i == first else 2)) for i, l in enumerate(net.layers)]
    fwd = sum(l[2] for l in net.layers)
    bwd = sum(f for _, _, f in back)
    out = [header]
    out.append("[profile]\nname = %s\nsample = %s\nsource = %s\n" % (name, sample, source))
    out.append("params = %d\nforward_flops = %d\nbackward_flops = %d\n\n" % (params, fwd, bwd))
    out.append("# layer = gradient elements, backward FLOPs per sample; listed in the order\n"
               "# the backward pass produces them (last layer first)\n[backward]\n")
    for nm, p, f in reversed(back):
        out.append("%s = %d %d\n" % (nm, p, f))
    out.append("\n# layer = forward FLOPs, output elements kept for the backward pass (per\n"
               "# sample), and where a pipeline stage may end after it, the elements that\n"
               "# cross to the next stage; first layer first\n[forward]\n")
    for nm, p, f, o, c, _, _ in net.layers:
        out.append("%s = %d %d%s\n" % (nm, f, o, " %d" % c if c else ""))
    if any(l[5] for l in net.layers):
        out.append("\n# layer = how Megatron-LM's tensor parallelism splits it (column, row, heads\n"
                   "# or vocab) and the elements per sample it then all-reduces across the tensor\n"
                   "# group (row, vocab: its output; column: its input gradient); layers not\n"
                   "# listed are replicated; first layer first\n[tensor]\n")
        for l in net.layers:
            if l[5]:
                out.append("%s = %s%s\n" % (l[0], l[5], " %d" % l[6] if l[6] else ""))
    return "".join(out), params, fwd, bwd, len(back)


def write(name, net, expect, sample, source):
    assert len(source) < 180, name + ": source longer than a scenario line"
    text, params, fwd, bwd, layers = profile_text(
        name, net, sample, source,
        "# Model profile %s: written by make_profiles.py (see its FLOP convention).\n" % name)
    assert params == expect, "%s: %d parameters, published %d" % (name, params, expect)
    with open(os.path.join(HERE, name + ".ini"), "w") as out:
        out.write(text)
    print("%-13s %13d params  %8.2f GFLOP forward  %8.2f GFLOP backward  %4d layers"
          % (name, params, fwd / 1e9, bwd / 1e9, layers))


if __name__ == "__main__":
    for name, make, expect, sample, source in PROFILES:
        write(name, make(), expect, sample, source)
