#!/usr/bin/env python3
"""Converts FedScale's two device traces (Python pickles) into the CSV layouts that dtsim
reads (scenarios/traces/README.md), keeping FedScale's field names and numbers:

  fedscale_to_csv.py devices client_device_capacity [OUT.csv]
      {client_id: {'computation': ms per sample, 'communication': kbit/s}}
      -> client_id,computation,communication  (one row per client)
  fedscale_to_csv.py availability client_behave_trace [OUT.csv]
      {client_id: {'duration': s, 'inactive': [s], 'finish_time': s, 'active': [s], 'model': str}}
      -> client_id,active,inactive,finish_time  (one window [active[i], inactive[i]] per row;
         a client without windows gets the empty window 0,0 so that it keeps its place)

Numbers are written as Python's repr, which reads back to the same double. Rows come sorted
by client id. 'duration' (the sum of the windows) and 'model' (the phone model) are not
kept. OUT defaults to standard output. Python 3 standard library only.

The pickles are read with an unpickler that builds only dicts, lists, strings and numbers:
a pickle that names any other class is refused (pickle.load would run it), except numpy's
scalars, which are rebuilt through numpy when it is installed.
"""
import io
import math
import pickle
import sys

NUMPY_SCALARS = {
    ("numpy.core.multiarray", "scalar"),
    ("numpy._core.multiarray", "scalar"),
    ("numpy", "dtype"),
}


class TraceError(Exception):
    pass


class SafeUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) in NUMPY_SCALARS:
            try:
                return super().find_class(module, name)
            except ImportError:
                pass
            raise TraceError(f"the pickle holds numpy values ({module}.{name}): "
                             "install numpy to convert it")
        raise TraceError(f"the pickle names {module}.{name}; a FedScale trace holds only "
                         "dicts, lists, strings and numbers")


def load(path):
    with open(path, "rb") as f:
        raw = f.read()
    try:
        data = SafeUnpickler(io.BytesIO(raw)).load()
    except TraceError:
        raise
    except Exception as e:  # a damaged pickle fails in many ways
        raise TraceError(f"not a readable pickle ({type(e).__name__}: {e})") from None
    if not isinstance(data, dict):
        raise TraceError(f"a {type(data).__name__}, not a dict of clients")
    return data


def client_id(key):
    """FedScale's keys are integer ids; digit strings are accepted too."""
    if isinstance(key, bool):
        raise TraceError(f"client id {key!r} is not an integer")
    if isinstance(key, str) and key.isdigit():
        key = int(key)
    try:
        if int(key) == key and int(key) >= 0:
            return int(key)
    except (TypeError, ValueError):
        pass
    raise TraceError(f"client id {key!r} is not an integer >= 0")


def number(x, what):
    """x as text that reads back to the same double."""
    if isinstance(x, bool):
        raise TraceError(f"{what} {x!r} is not a number")
    if isinstance(x, int):
        return str(x)
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise TraceError(f"{what} {x!r} is not a number") from None
    if not math.isfinite(v):
        raise TraceError(f"{what} {x!r} is not finite")
    return repr(v)


def field(entry, key, cid):
    if not isinstance(entry, dict) or key not in entry:
        raise TraceError(f"client {cid}: no '{key}' field")
    return entry[key]


def device_rows(capacity):
    """Rows of client_id,computation,communication from client_device_capacity's dict."""
    rows = []
    for key, entry in capacity.items():
        cid = client_id(key)
        rows.append((cid, number(field(entry, "computation", cid), f"client {cid}: computation"),
                     number(field(entry, "communication", cid), f"client {cid}: communication")))
    rows.sort(key=lambda r: r[0])
    return rows


def availability_rows(behave):
    """Rows of client_id,active,inactive,finish_time from client_behave_trace's dict.
    FedScale (fedscale/cloud/internal/client_metadata.py, is_active) pairs active[i] with
    inactive[i] for i < len(active), so inactive may not be shorter than active."""
    rows = []
    for key, entry in behave.items():
        cid = client_id(key)
        active, inactive = field(entry, "active", cid), field(entry, "inactive", cid)
        finish = number(field(entry, "finish_time", cid), f"client {cid}: finish_time")
        if not isinstance(active, (list, tuple)) or not isinstance(inactive, (list, tuple)):
            raise TraceError(f"client {cid}: active and inactive are not lists")
        if len(inactive) < len(active):
            raise TraceError(f"client {cid}: {len(active)} active times but only "
                             f"{len(inactive)} inactive ones")
        windows = [(number(a, f"client {cid}: active"), number(i, f"client {cid}: inactive"))
                   for a, i in zip(active, inactive)]
        for a, i in windows or [("0", "0")]:
            rows.append((cid, a, i, finish))
    rows.sort(key=lambda r: (r[0], float(r[1])))
    return rows


DEVICE_HEADER = ("client_id", "computation", "communication")
AVAILABILITY_HEADER = ("client_id", "active", "inactive", "finish_time")


def write_csv(out, header, rows, comment=None):
    if comment:
        for line in comment.splitlines():
            out.write(f"# {line}\n" if line else "#\n")
    out.write(",".join(header) + "\n")
    for r in rows:
        out.write(",".join(str(x) for x in r) + "\n")


def main(argv):
    if len(argv) not in (3, 4) or argv[1] not in ("devices", "availability"):
        sys.stderr.write("usage: fedscale_to_csv.py devices|availability PICKLE [OUT.csv]\n")
        return 2
    kind, src = argv[1], argv[2]
    try:
        data = load(src)
        if kind == "devices":
            header, rows = DEVICE_HEADER, device_rows(data)
        else:
            header, rows = AVAILABILITY_HEADER, availability_rows(data)
    except (OSError, TraceError) as e:
        sys.stderr.write(f"fedscale_to_csv.py: {src}: {e}\n")
        return 2
    if len(argv) == 4 and argv[3] != "-":
        with open(argv[3], "w") as out:
            write_csv(out, header, rows)
    else:
        write_csv(sys.stdout, header, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
