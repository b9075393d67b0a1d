#!/usr/bin/env python3
"""Compares two dtsim results databases row by row (a refactoring must not move a figure).

    python3 tests/dbdiff.py BEFORE.db AFTER.db [--tolerance REL]

Runs are matched by name (sweeps run with -j N insert in any order); every table's rows of a
run are compared in a fixed order (a table one file lacks, as messages before schema version
5, is left out), all columns but those that name the process or the moment
(run ids, pids, hosts, start and end times, versions, the sweep id) and the database's own
path (run.db, in params and in the stored configuration). With --key-order, the stored
configuration is compared as the set of its lines in each section, and the sweep's fingerprint
(a hash of that text) is left out: for a change that moves keys in the key table and nothing
else. Wall-clock figures are
not stored, so on the CPU backend with the flops time model two runs of one scenario agree
to the last digit: the default tolerance is 0. Prints each difference (at most 20 per table)
and exits 1 when there is one, 0 when the databases agree, 2 on bad input.
"""
import argparse
import math
import sqlite3
import sys

# table -> (columns compared, order) ; every table has a `run` column but runs itself
TABLES = {
    "params": ("key, value, number", "key"),  # less run.db (below)
    "evals": ("sim_time, step, samples, bytes, test_loss, test_acc, perplexity", "sim_time, step"),
    "workers": ("worker, host, role, compute_s, comm_s, idle_s, bytes_sent, bytes_recv, steps",
                "role, worker"),
    "memory": ("worker, role, params, grads, optimizer, activations", "role, worker"),
    "staleness": ("staleness, count", "staleness"),
    "label_hist": ("client, label, count", "client, label"),
    "timeline": ("host, role, rank, state, start, end", "role, rank, start, state"),
    "links": ("link, bytes", "link"),
    "faults": ("sim_time, kind, target, detail", "sim_time, kind, target, detail"),
    "messages": ("src_host, src_role, src_rank, dst_host, dst_role, dst_rank, sent, start, done, "
                 "bytes", "sent, done, src_role, src_rank, dst_role, dst_rank, start, bytes"),
    "summary": ("final_accuracy, final_loss, sim_time, time_to_target, target_accuracy, "
                "total_bytes, compute_share, comm_share, idle_share, steps", "run"),
}
RUN_COLUMNS = "name, strategy, status, config, seed, sweep_index"


def same(a, b, tol):
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) and math.isnan(b):
            return True
        return a == b or abs(a - b) <= tol * max(abs(a), abs(b))
    return a == b


def without_db(config):
    """The stored configuration less its `db = PATH` line (where the run was written)."""
    if config is None:
        return None
    return "\n".join(l for l in config.split("\n") if not l.startswith("db = "))


def by_section(config):
    """The configuration's lines as {section: sorted lines} (the order of keys left out)."""
    if config is None:
        return None
    out, section = {}, ""
    for line in config.split("\n"):
        if line.startswith("["):
            section = line
        out.setdefault(section, []).append(line)
    return {k: sorted(v) for k, v in out.items()}


def show(v):
    text = repr(v)
    return text if len(text) <= 80 else text[:77] + "..."


def has_table(db, name):
    return db.execute("SELECT 1 FROM sqlite_schema WHERE name = ?", (name,)).fetchone() is not None


def runs(db, path):
    rows = db.execute(f"SELECT id, {RUN_COLUMNS} FROM runs ORDER BY name, id").fetchall()
    by_name = {}
    for r in rows:
        r = r[:4] + (without_db(r[4]),) + r[5:]
        if r[1] in by_name:
            sys.exit(f"dbdiff: {path}: two runs named {r[1]!r}: cannot match them")
        by_name[r[1]] = r
    return by_name


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--tolerance", type=float, default=0.0,
                    help="relative tolerance for real numbers (default 0: exact)")
    ap.add_argument("--key-order", action="store_true",
                    help="the configuration's keys in any order within a section, the sweep "
                         "fingerprint left out")
    a = ap.parse_args()
    dbs = []
    for p in (a.before, a.after):
        try:
            db = sqlite3.connect(f"file:{p}?mode=ro", uri=True)
            db.execute("SELECT count(*) FROM runs").fetchone()
        except sqlite3.Error as e:
            print(f"dbdiff: {p}: {e}", file=sys.stderr)
            return 2
        dbs.append(db)
    ra, rb = runs(dbs[0], a.before), runs(dbs[1], a.after)
    diffs = 0
    for name in sorted(set(ra) ^ set(rb)):
        print(f"run {name!r}: only in {a.before if name in ra else a.after}")
        diffs += 1
    for name in sorted(set(ra) & set(rb)):
        x, y = ra[name], rb[name]
        for col, u, v in zip(RUN_COLUMNS.split(", "), x[1:], y[1:]):
            if col == "config" and a.key_order:
                u, v = by_section(u), by_section(v)
            if not same(u, v, a.tolerance):
                print(f"run {name!r}: runs.{col}: {show(u)} != {show(v)}")
                diffs += 1
        for table, (cols, order) in TABLES.items():
            if not all(has_table(db, table) for db in dbs):
                continue  # a file from before the table (messages: schema version 5)
            skip = " AND key != 'run.db'" if table == "params" else ""
            if table == "params" and a.key_order:
                skip += " AND key != 'sweep.fingerprint'"
            q = f"SELECT {cols} FROM {table} WHERE run = ?{skip} ORDER BY {order}"
            rx = dbs[0].execute(q, (x[0],)).fetchall()
            ry = dbs[1].execute(q, (y[0],)).fetchall()
            shown = 0
            if len(rx) != len(ry):
                print(f"run {name!r}: {table}: {len(rx)} rows != {len(ry)} rows")
                diffs += 1
            for i, (p, q_) in enumerate(zip(rx, ry)):
                for col, u, v in zip(cols.split(", "), p, q_):
                    if not same(u, v, a.tolerance):
                        diffs += 1
                        if shown < 20:
                            print(f"run {name!r}: {table} row {i}: {col}: {show(u)} != {show(v)}")
                        shown += 1
    total = len(set(ra) & set(rb))
    print(f"dbdiff: {total} runs compared, {diffs} difference{'s' if diffs != 1 else ''}")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
