#!/usr/bin/env python3
"""Writes the synthetic sample traces of this folder (deterministic: a fixed seed, Python's
random module, whose seeded streams do not change between Python 3 versions):

  devices-sample.csv               100 clients, dtsim's layout: speed, up, down, latency
  availability-sample.csv          the same 100 clients online over one day (24 h)
  fedscale-devices-sample.csv      20 clients in FedScale's layout, via fedscale_to_csv.py
  fedscale-availability-sample.csv 8 clients in FedScale's layout, via fedscale_to_csv.py

The distributions are plausible, not measured: 70% phones and 30% laptops, each value
lognormal around a class median (see CLASSES). Run from anywhere: `python3 make_sample.py`.
"""
import os
import random
import sys

sys.dont_write_bytecode = True  # no __pycache__ beside the shipped files
import fedscale_to_csv  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = 20240611
DAY = 86400

# class: share, (median, sigma) of speed (GFLOP/s), up and down (Mbit/s), latency (ms)
CLASSES = {
    "phone": (0.7, (15, 0.6), (8, 0.8), (30, 0.8), (50, 0.5)),
    "laptop": (0.3, (120, 0.5), (20, 0.7), (100, 0.6), (20, 0.5)),
}


def sig3(x, lo, hi):
    """x clamped to [lo, hi], three significant digits, never an exponent."""
    s = f"{min(max(x, lo), hi):.3g}"
    assert "e" not in s, s
    return s


def lognormal(rng, median, sigma):
    return median * pow(2.718281828459045, sigma * rng.gauss(0, 1))


def devices(rng, n):
    kinds, rows = [], []
    for c in range(n):
        kind = "phone" if rng.random() < CLASSES["phone"][0] else "laptop"
        _, speed, up, down, lat = CLASSES[kind]
        rows.append((c, sig3(lognormal(rng, *speed), 1, 999) + "Gf",
                     sig3(lognormal(rng, *up), 0.1, 999) + "Mbps",
                     sig3(lognormal(rng, *down), 0.1, 999) + "Mbps",
                     str(round(min(max(lognormal(rng, *lat), 5), 500))) + "ms"))
        kinds.append(kind)
    return kinds, rows


def minute(rng, mean_h, sd_h, lo_h, hi_h):
    """A time of day in seconds, on the minute, normal around mean_h hours, clamped."""
    return 60 * round(60 * min(max(rng.gauss(mean_h, sd_h), lo_h), hi_h))


def day_windows(rng, kind):
    """Online windows [start, end) within one day; night windows past midnight wrap."""
    w = []
    if kind == "phone":  # charging overnight on Wi-Fi, sometimes a lunch break
        start = minute(rng, 22.5, 1.2, 19, 25)
        w.append((start, start + minute(rng, 7, 1.5, 3, 10)))
        if rng.random() < 0.5:
            s = minute(rng, 13, 0.5, 12, 14)
            w.append((s, s + minute(rng, 0.75, 0.25, 0.25, 1)))
    else:  # plugged in at work, sometimes an evening session
        start = minute(rng, 9, 1, 7, 11)
        w.append((start, start + minute(rng, 7, 1.5, 4, 10)))
        if rng.random() < 0.3:
            s = minute(rng, 22, 0.3, 21.5, 23)
            w.append((s, s + minute(rng, 1, 0.3, 0.5, 1.5)))
    out = []
    for s, e in w:
        s, e = s % DAY, s % DAY + (e - s)
        out += [(s, DAY), (0, e - DAY)] if e > DAY else [(s, e)]
    out.sort()
    for (s0, e0), (s1, e1) in zip(out, out[1:]):
        assert e0 <= s1, (out, kind)
    return out


def availability(rng, kinds):
    rows = []
    for c, kind in enumerate(kinds):
        for s, e in day_windows(rng, kind):
            rows.append((c, f"{s}s", f"{e}s"))
    assert max(int(r[2][:-1]) for r in rows) == DAY  # the trace's span, its period, is a day
    return rows


def fedscale_devices(rng, n):
    """client_device_capacity's shape: {id: {'computation': ms/sample, 'communication': kbps}}."""
    ids = sorted(rng.sample(range(1, 500000), n))
    return {i: {"computation": float(round(lognormal(rng, 80, 0.7))),
                "communication": lognormal(rng, 5000, 1.0)} for i in ids}


def fedscale_behave(rng, n):
    """client_behave_trace's shape over FedScale's six days (finish_time 518400 s)."""
    finish = 6 * DAY
    trace = {}
    for i in sorted(rng.sample(range(1, 110000), n)):
        active, inactive, t = [], [], rng.randrange(0, 20000)
        while True:
            a = t
            e = a + rng.randrange(600, 60000)
            if e > finish:
                break
            active.append(a)
            inactive.append(e)
            t = e + rng.randrange(1800, 90000)
        trace[i] = {"duration": sum(e - a for a, e in zip(active, inactive)),
                    "inactive": inactive, "finish_time": finish, "active": active,
                    "model": "sample"}
    first = min(trace)
    trace[first]["active"][:0] = [0]  # an empty window, as in FedScale's own test
    trace[first]["inactive"][:0] = [0]
    trace[max(trace)].update(active=[], inactive=[], duration=0)  # a client never online
    return trace


def write(name, header, rows, comment):
    with open(os.path.join(HERE, name), "w") as out:
        fedscale_to_csv.write_csv(out, header, rows, comment)


def main():
    rng = random.Random(SEED)
    kinds, dev = devices(rng, 100)
    write("devices-sample.csv", ("client", "speed", "up", "down", "latency"), dev,
          "Synthetic devices of 100 clients (make_sample.py): 70% phones, 30% laptops.\n"
          "speed: FLOP/s of training; up, down: the client's access link; latency: one way.")
    write("availability-sample.csv", ("client", "start", "end"), availability(rng, kinds),
          "Synthetic availability of the 100 clients of devices-sample.csv over one day\n"
          "(make_sample.py): phones overnight (and some at lunch), laptops in working hours.\n"
          "One online window [start, end) per row; the trace repeats every 24h (its span).")
    write("fedscale-devices-sample.csv", fedscale_to_csv.DEVICE_HEADER,
          fedscale_to_csv.device_rows(fedscale_devices(rng, 20)),
          "Synthetic, in FedScale's client_device_capacity layout (make_sample.py).\n"
          "computation: ms of one sample's inference; communication: kbit/s.")
    write("fedscale-availability-sample.csv", fedscale_to_csv.AVAILABILITY_HEADER,
          fedscale_to_csv.availability_rows(fedscale_behave(rng, 8)),
          "Synthetic, in FedScale's client_behave_trace layout (make_sample.py).\n"
          "Seconds; one window [active, inactive] per row; repeats every finish_time.")


if __name__ == "__main__":
    main()
