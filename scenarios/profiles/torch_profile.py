#!/usr/bin/python3
"""Writes the model profile (timing-only runs, model.arch = profile:FILE) of a torchvision
model or of a module of your own, with make_profiles.py's FLOP convention. Needs Debian's
python3-torch and python3-torchvision (run it with /usr/bin/python3 where python3 is
another interpreter). Usage:

    torch_profile.py resnet50 --out resnet50.ini
    torch_profile.py inception_v3 --input 3x299x299 --out inception_v3.ini
    torch_profile.py my_net.py:Net --input 1x28x28 --out my-net.ini
    torch_profile.py my_lm.py:make_model --input 512 --dtype long --out my-lm.ini

MODEL is a torchvision model name (torchvision.models.list_models()) or FILE.py:NAME, where
NAME is an nn.Module class or a function, called with no arguments, that returns one.

How: the model is built without initialising its weights, moved to PyTorch's meta device
(shapes without data: no arithmetic, no memory), put in eval mode and run once on a batch of
one sample of --input's shape (on the CPU if an operation has no meta version). Forward
hooks on its modules and a torch function mode see every module call and every tensor
operation in between, in the order they run, so any model that runs eagerly can be profiled.

Layers, in the order the forward pass calls them, named by their path in the model
(layer1.0.conv1): every leaf module (one without children; nn.MultiheadAttention counts as
one) that has parameters or counted FLOPs; every counted function called between modules
(a matmul in your forward: its module's path and the function's name); every parameter used
directly (ViT's class_token), where first used. A module called twice is listed at each call
(NAME#2), its parameters once. Parameters the forward pass never uses (inception_v3's
auxiliary classifier, which runs in training only) are left out, and said so on stderr.

FLOPs per sample (make_profiles.py's convention): convolutions and linear layers 2 per
multiply-add (biases not counted); batch, layer, group and instance normalisation 4 per
output element; nn.MultiheadAttention its four projections, 2 x 2 x T x S x E for the scores
and the weighted values, 5 per score for the softmax; the functions matmul, bmm, mm, linear
and conv 2 per multiply-add, softmax 5 per element, the normalisations 4 per element;
everything else 0 (activations, pooling, additions, reshapes, embedding lookups). A leaf
module of another kind with parameters (an LSTM) keeps its parameters with 0 FLOPs, said so
on stderr. The backward pass costs twice the forward, except the first layer with
parameters (1x).

Outputs: each layer's output elements per sample (nn.MultiheadAttention: its projections,
its probabilities, heads x T x S, and its output). Cuts: a pipeline stage may end after a
layer where, between it and the next layer, the model's data is one tensor (one tensor made
before that point is used after it); the cut crosses where that tensor is smallest (after
pooling where one follows), and there is none right before a normalisation layer, which
stays with the layer it normalises.
"""
import argparse
import contextlib
import difflib
import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_profiles  # noqa: E402  (its Net and profile_text: one writer of the format)


class UsageError(Exception):
    """Bad input: one line on stderr, exit code 2."""


class Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def parse_args(argv):
    p = Parser(prog="torch_profile.py", description=__doc__.split("\n\n")[0],
               formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", help="a torchvision model name, or FILE.py:NAME")
    p.add_argument("--input", default="3x224x224",
                   help="one sample's shape, without the batch (default 3x224x224)")
    p.add_argument("--dtype", choices=("float", "long"), default="float",
                   help="the input's type: long for token ids (zeros)")
    p.add_argument("--name", help="profile.name (default: the model's name)")
    p.add_argument("--sample", help="profile.sample (default: \"a SHAPE input\")")
    p.add_argument("--out", required=True, help="the profile file to write; - for stdout")
    a = p.parse_args(argv)
    try:
        a.shape = tuple(int(d) for d in a.input.split("x"))
    except ValueError:
        a.shape = ()
    if not a.shape or min(a.shape) < 1:
        raise UsageError("--input: \"%s\" is not a shape such as 3x224x224" % a.input)
    # what the profile loader reads back as written (profile.name 63 bytes, sample 127)
    for opt, text, most in (("--name", a.name, 63), ("--sample", a.sample, 127)):
        if text is not None and not (0 < len(text) <= most and text.isprintable() and
                                     text == text.strip() and not set(text) & set(";#=[]")):
            raise UsageError("%s: \"%s\" is not 1 to %d printable characters without ;#=[] "
                             "and blanks at either end" % (opt, text, most))
    path = a.model.split(":", 1)[0]
    if path.endswith(".py") and not os.path.isfile(path):
        raise UsageError("%s: no such file" % path)
    return a


# ---- building the model -----------------------------------------------------------------

def first_line(e):
    return str(e).splitlines()[0] if str(e) else ""


@contextlib.contextmanager
def no_init(torch):
    """torch.nn.init's functions do nothing: the weights' values do not matter here, and
    initialising a large model takes seconds."""
    saved = {n: f for n, f in vars(torch.nn.init).items()
             if n.endswith("_") and not n.startswith("_") and callable(f)}
    for n in saved:
        setattr(torch.nn.init, n, lambda tensor, *args, **kwargs: tensor)
    try:
        yield
    finally:
        for n, f in saved.items():
            setattr(torch.nn.init, n, f)


def build(torch, spec):
    """The module and its name, from a torchvision name or FILE.py:NAME."""
    if ":" in spec and spec.split(":", 1)[0].endswith(".py"):
        path, attr = spec.split(":", 1)
        loader = importlib.util.spec_from_file_location(
            os.path.splitext(os.path.basename(path))[0], path)
        module = importlib.util.module_from_spec(loader)
        sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
        try:
            loader.loader.exec_module(module)
        except Exception as e:  # the user's file: its error, in one line
            raise UsageError("%s: %s: %s" % (path, type(e).__name__, first_line(e)))
        if not hasattr(module, attr):
            raise UsageError("%s has no %s" % (path, attr))
        try:
            with no_init(torch):
                model = getattr(module, attr)()
        except Exception as e:
            raise UsageError("%s: %s(): %s: %s" % (path, attr, type(e).__name__, first_line(e)))
        if not isinstance(model, torch.nn.Module):
            raise UsageError("%s: %s() returned a %s, not an nn.Module"
                             % (path, attr, type(model).__name__))
        return model, attr
    import torchvision
    names = torchvision.models.list_models()
    if spec not in names:
        near = difflib.get_close_matches(spec, names, 3)
        raise UsageError("unknown model \"%s\" (%storchvision.models.list_models() has %d; "
                         "or FILE.py:NAME)" % (spec, "did you mean %s? " % " or ".join(near)
                                               if near else "", len(names)))
    with no_init(torch):
        return torchvision.models.get_model(spec, weights=None), spec


# ---- tracing ----------------------------------------------------------------------------

def tensors(x, torch):
    """The tensors in x (a tensor, or lists, tuples and dicts of them), in order."""
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in tensors(v, torch)]
    if isinstance(x, dict):
        return [t for v in x.values() for t in tensors(v, torch)]
    return []


def numel(ts):
    return sum(t.numel() for t in ts)


class Trace:
    """What the forward pass did: events (module calls and operations, in order) reading and
    writing values (versions of tensors), and the profile's layers among them."""

    def __init__(self, torch, model):
        self.torch = torch
        self.nn = torch.nn
        self.param_names = {id(p): n for n, p in model.named_parameters()}
        self.used = set()        # ids of parameters counted
        self.values = {}         # id(tensor) -> current value number
        self.keep = []           # every tensor seen, so that no id is reused
        self.sizes = []          # value -> elements (None: not a tensor)
        self.made = []           # value -> event that wrote it (-1: the input)
        self.last_read = []      # value -> last event that read it
        self.events = 0
        self.layers = []         # [name, params, flops, outputs, event, is_norm]
        self.names = {}          # name -> times used
        self.stack = []          # paths of the modules being called
        self.depth = 0           # > 0 inside a leaf module
        self.warned = set()

    # values
    def write(self, t, event):
        self.keep.append(t)
        self.values[id(t)] = len(self.sizes)
        self.sizes.append(t.numel())
        self.made.append(event)
        self.last_read.append(event)

    def read(self, ts, event):
        params = []
        for t in ts:
            if id(t) in self.param_names:
                if id(t) not in self.used:
                    params.append(t)
            elif id(t) in self.values:
                v = self.values[id(t)]
                self.last_read[v] = max(self.last_read[v], event)
        return params

    def event(self, inputs, outputs):
        """An operation: reads inputs, writes outputs; returns its number and the model's
        parameters it uses for the first time."""
        e = self.events
        self.events += 1
        params = self.read(tensors(inputs, self.torch), e)
        for t in tensors(outputs, self.torch):
            self.write(t, e)
        return e, params

    # layers
    def unique(self, name):
        k = self.names.get(name, 0) + 1
        self.names[name] = k
        return name if k == 1 else "%s#%d" % (name, k)

    def layer(self, name, params, flops, outputs, event, is_norm=False):
        for p in params:
            self.used.add(id(p))
        self.layers.append([self.unique(name), numel(params), int(flops), int(outputs), event,
                            is_norm])

    def warn(self, what):
        if what not in self.warned:
            self.warned.add(what)
            print("torch_profile.py: " + what, file=sys.stderr)


def prod(xs):
    r = 1
    for x in xs:
        r *= x
    return r


def module_flops(nn, m, inputs, outputs):
    """Forward FLOPs, output elements and whether it normalises, of leaf module m; None when
    the convention has no rule for it."""
    y = numel(outputs)
    if isinstance(m, nn.modules.conv._ConvNd):
        k = prod(m.kernel_size)
        if m.transposed:
            return 2 * numel(inputs[:1]) * (m.out_channels // m.groups) * k, y, False
        return 2 * y * (m.in_channels // m.groups) * k, y, False
    if isinstance(m, nn.Linear):
        return 2 * y * m.in_features, y, False
    if isinstance(m, (nn.modules.batchnorm._BatchNorm, nn.LayerNorm, nn.GroupNorm,
                      nn.modules.instancenorm._InstanceNorm)):
        return 4 * y, y, True
    if isinstance(m, (nn.Embedding, nn.EmbeddingBag)):
        return 0, y, False
    if isinstance(m, nn.MultiheadAttention):
        q, k = inputs[0], inputs[1] if len(inputs) > 1 else inputs[0]  # query, key
        E, h = m.embed_dim, m.num_heads
        T, S = q.numel() // E, k.numel() // m.kdim
        flops = (2 * T * E * E + 2 * S * m.kdim * E + 2 * S * m.vdim * E  # projections
                 + 2 * 2 * T * S * E + 5 * h * T * S + 2 * T * E * E)  # scores, output
        return flops, T * E + 2 * S * E + h * T * S + 2 * T * E, False
    return None


def function_flops(torch, func, args, kwargs, out):
    """Forward FLOPs of a counted function and whether it normalises; None for the rest."""
    F = torch.nn.functional
    name = getattr(func, "__name__", "")
    y = numel(tensors(out, torch))
    a = tensors((args, kwargs), torch)
    if name in ("matmul", "__matmul__", "bmm", "mm", "baddbmm", "addmm") and len(a) >= 2:
        x = a[-2]
        return 2 * y * x.shape[-1], False
    if func is F.linear:
        return 2 * y * a[1].shape[1], False
    if func in (F.conv1d, F.conv2d, F.conv3d):
        return 2 * y * prod(a[1].shape[1:]), False
    if name in ("softmax", "log_softmax"):
        return 5 * y, False
    if func in (F.layer_norm, F.batch_norm, F.group_norm, F.instance_norm):
        return 4 * y, True
    return None


def trace(torch, model, x):
    """Runs model on x with every module's forward wrapped (hooks of PyTorch 1.13 do not see
    keyword arguments) and a torch function mode seeing the operations in between."""
    nn = torch.nn
    tr = Trace(torch, model)

    def is_leaf(m):
        return not any(True for _ in m.children()) or isinstance(m, nn.MultiheadAttention)

    def leaf_called(path, m, inputs, out):
        outputs = tensors(out, torch)
        e, _ = tr.event(inputs, outputs)
        params = [p for p in m.parameters() if id(p) not in tr.used]
        counted = module_flops(nn, m, inputs, outputs)
        if counted is None:
            if params:
                tr.warn("FLOPs of %s (%s) not counted: the convention has no rule for it"
                        % (path, type(m).__name__))
                tr.layer(path, params, 0, numel(outputs), e)
            return
        flops, outs, is_norm = counted
        if params or flops:
            tr.layer(path, params, flops, outs, e, is_norm)

    def wrap(path, m, forward):
        leaf = is_leaf(m)

        def call(*args, **kwargs):
            tr.stack.append(path)
            tr.depth += leaf
            try:
                out = forward(*args, **kwargs)
            finally:
                tr.stack.pop()
                tr.depth -= leaf
            if leaf and tr.depth == 0:
                leaf_called(path, m, tensors((args, kwargs), torch), out)
            elif not leaf and tr.depth == 0:
                # its own parameters that no operation showed (PyTorch 1.13's function mode
                # does not see indexing a Parameter: Swin's relative position bias)
                for p in m.parameters(recurse=False):
                    if id(p) not in tr.used:
                        tr.layer(tr.param_names[id(p)], [p], 0, 0, tr.events - 1)
            return out
        return call

    class Mode(torch.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            # an operation that makes no tensor (x.shape, x.size(0)) reads no data
            if tr.depth == 0 and tensors(out, torch):
                e, params = tr.event((args, kwargs), out)
                counted = function_flops(torch, func, args, kwargs, out)
                where = tr.stack[-1] + "." if tr.stack and tr.stack[-1] else ""
                if counted:
                    tr.layer(where + getattr(func, "__name__", "op").strip("_"), params,
                             counted[0], numel(tensors(out, torch)), e, counted[1])
                else:
                    for p in params:  # a parameter used directly: a layer of its own
                        tr.layer(tr.param_names[id(p)], [p], 0, 0, e)
            return out

    modules = list(model.named_modules())
    own = [m.__dict__.get("forward") for _, m in modules]  # a forward set on the instance
    for path, m in modules:
        m.forward = wrap(path, m, m.forward)
    tr.write(x, -1)
    try:
        with torch.no_grad(), Mode():
            out = model(x)
    finally:
        for (_, m), forward in zip(modules, own):
            if forward is None:
                del m.forward  # the class's forward again
            else:
                m.forward = forward
    for t in tensors(out, torch):  # the model's output is read at the end
        if id(t) in tr.values:
            tr.last_read[tr.values[id(t)]] = tr.events
    return tr


def cuts(tr):
    """The elements crossing after each layer where a stage may end (0: no cut there)."""
    # the values live at boundary b (made before event b, read at b or later), swept once;
    # where one alone is live, its size and the event that made it
    n = tr.events
    starts = [[] for _ in range(n + 2)]
    ends = [[] for _ in range(n + 2)]
    for v, (made, last) in enumerate(zip(tr.made, tr.last_read)):
        if last > made:
            starts[made + 1].append(v)
            ends[last + 1].append(v)
    live, single = set(), [None] * (n + 1)
    for b in range(n + 1):
        live.update(starts[b])
        live.difference_update(ends[b])
        if len(live) == 1:
            v = next(iter(live))
            single[b] = (tr.sizes[v], tr.made[v])
    result = []
    for i, l in enumerate(tr.layers):
        nxt = tr.layers[i + 1] if i + 1 < len(tr.layers) else None
        sizes = [] if nxt is None else [
            single[b][0] for b in range(l[4] + 1, nxt[4] + 1)
            # a normalisation stays with the layer whose output it normalises
            if single[b] is not None and not (nxt[5] and single[b][1] == l[4])]
        result.append(min(sizes) if sizes else 0)
    return result


def profile(torch, model, shape, dtype):
    """The trace of model on one sample: on the meta device, else on the CPU (an operation
    without a meta version)."""
    model.eval()
    kind = torch.long if dtype == "long" else torch.float32
    try:
        return trace(torch, model.to("meta"), torch.zeros((1,) + shape, dtype=kind,
                                                          device="meta"))
    except (NotImplementedError, RuntimeError) as e:
        on_meta = first_line(e) or type(e).__name__
    tr = trace(torch, model.to_empty(device="cpu"), torch.zeros((1,) + shape, dtype=kind))
    print("torch_profile.py: ran on the CPU (on the meta device: %s)" % on_meta,
          file=sys.stderr)
    return tr


def short(name):
    """A layer name the profile loader takes: at most 63 characters, none of the INI file's
    delimiters (= and :), comments (;) or blanks."""
    for c in "=:; \t":
        name = name.replace(c, "_")
    name = name or "layer"
    return name if len(name) <= 63 else "~" + name[-62:]


def main(argv):
    a = parse_args(argv)
    try:
        import torch
    except ImportError:
        print("torch_profile.py: needs PyTorch (Debian: python3-torch, python3-torchvision; "
              "run with /usr/bin/python3)", file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    model, default_name = build(torch, a.model)
    try:
        tr = profile(torch, model, a.shape, a.dtype)
    except Exception as e:  # the user's model on the user's shape: say why, in one line
        raise UsageError("the forward pass of %s on a %s input failed: %s: %s"
                         % (a.model, a.input, type(e).__name__, first_line(e)))
    if not any(l[1] for l in tr.layers):
        raise UsageError("%s: the forward pass used no parameters" % a.model)
    unused = [(n, p.numel()) for n, p in model.named_parameters() if id(p) not in tr.used]
    if unused:
        print("torch_profile.py: %d parameters the forward pass does not use are left out "
              "(%s%s)" % (sum(c for _, c in unused), ", ".join(n for n, _ in unused[:3]),
                          ", ..." if len(unused) > 3 else ""), file=sys.stderr)
    net = make_profiles.Net()
    seen = set()
    for l, c in zip(tr.layers, cuts(tr)):
        name = short(l[0])
        while name in seen:
            name = short(name + "'")
        seen.add(name)
        net.add(name, l[1], l[2], l[3])
        if c:
            net.cut(c)
    import torchvision
    name = a.name or default_name
    source = ("torch_profile.py %s --input %s (PyTorch %s, torchvision %s)"
              % (a.model, a.input, torch.__version__, torchvision.__version__))[:170]
    text = make_profiles.profile_text(
        name, net, a.sample or "a %s input" % a.input, source,
        "# Model profile %s: written by torch_profile.py (make_profiles.py's FLOP "
        "convention).\n" % name)[0]
    if a.out == "-":
        sys.stdout.write(text)
        return 0
    tmp = "%s.tmp-%d" % (a.out, os.getpid())
    try:
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, a.out)
    except OSError as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise UsageError("%s: cannot write: %s" % (a.out, e.strerror))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except UsageError as e:
        print("torch_profile.py: %s" % e, file=sys.stderr)
        sys.exit(2)
