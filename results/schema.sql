-- dtsim results database, schema version 1.
--
-- One file holds any number of runs. Every table other than runs refers to runs(id); deleting
-- a run deletes its rows (ON DELETE CASCADE, with PRAGMA foreign_keys = ON, which dtsim sets).
-- This file is embedded into the dtsim binary at build time and executed, in one transaction,
-- on a database that has no schema yet (PRAGMA user_version = 0). A database written by a
-- newer dtsim (a higher user_version) is refused rather than guessed at.
--
-- Units: simulated times in seconds of simulated time; byte counts in bytes (REAL, because
-- sums over thousands of workers and steps overflow nothing and need no exact integer);
-- wall-clock times are ISO 8601 UTC text with milliseconds, e.g. 2025-01-31T12:34:56.789Z.
-- A metric that is undefined (an evaluation that produced NaN, a target never reached) is NULL.

-- 'dtsi' in ASCII: tells a dtsim database from any other SQLite file.
PRAGMA application_id = 1685353321;
PRAGMA user_version = 1;

-- One row per run (one expanded scenario with one seed).
CREATE TABLE runs (
    id              INTEGER PRIMARY KEY,
    name            TEXT,
    strategy        TEXT,
    -- running until the writer ends it; interrupted when the writer vanished (killed, crashed
    -- machine) or stopped on a signal; diverged when the loss became NaN or Inf.
    status          TEXT NOT NULL DEFAULT 'running'
                    CHECK (status IN ('running', 'finished', 'failed', 'diverged', 'interrupted')),
    config          TEXT,    -- the fully resolved scenario, INI text, replayable as is
    -- The 64 bits of the seed; seeds of 2^63 and above read back negative (same bits).
    seed            INTEGER,
    dtsim_version   TEXT,
    simgrid_version TEXT,
    -- The writing process: a later writer on the same host marks a 'running' run whose
    -- process no longer exists as 'interrupted' (its ended time then stays NULL: unknown).
    pid             INTEGER,
    host            TEXT,
    started         TEXT NOT NULL,
    ended           TEXT
);
CREATE INDEX runs_status ON runs (status);

-- Test-set evaluations at checkpoints: the curves accuracy vs simulated time, vs bytes.
CREATE TABLE evals (
    run       INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    sim_time  REAL,      -- simulated seconds since the start of the run
    step      INTEGER,   -- optimizer steps (rounds for federated strategies) so far
    samples   REAL,      -- training samples processed so far, all workers together
    bytes     REAL,      -- bytes sent over the network so far, all hosts together
    test_loss REAL,      -- NULL if NaN
    test_acc  REAL       -- in [0, 1]; NULL if NaN
);
CREATE INDEX evals_run ON evals (run, sim_time);

-- Per host and role, totals over the run: the time breakdown and the per-worker timeline.
CREATE TABLE workers (
    run        INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    worker     INTEGER NOT NULL,   -- index within its role
    host       TEXT,               -- SimGrid host name
    role       TEXT NOT NULL,      -- worker, server or client
    compute_s  REAL,               -- simulated seconds computing
    comm_s     REAL,               -- simulated seconds communicating
    idle_s     REAL,               -- simulated seconds waiting for others
    bytes_sent REAL,
    bytes_recv REAL,
    steps      INTEGER             -- local steps taken
);
CREATE INDEX workers_run ON workers (run);

-- Histogram of the staleness of applied gradients (asynchronous parameter server):
-- count gradients were applied staleness versions after the parameters they were computed on.
-- Adding to an existing bucket adds to its count.
CREATE TABLE staleness (
    run       INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    staleness INTEGER NOT NULL,
    count     INTEGER NOT NULL,
    PRIMARY KEY (run, staleness)
) WITHOUT ROWID;

-- Per client (or worker) label histograms of the data partition: how non-IID it is.
-- Adding to an existing (client, label) adds to its count.
CREATE TABLE label_hist (
    run    INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    client INTEGER NOT NULL,
    label  INTEGER NOT NULL,
    count  INTEGER NOT NULL,
    PRIMARY KEY (run, client, label)
) WITHOUT ROWID;

-- One row per ended run: the figures of the summary table.
CREATE TABLE summary (
    run             INTEGER PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    final_accuracy  REAL,
    final_loss      REAL,
    sim_time        REAL,      -- simulated seconds, whole run
    time_to_target  REAL,      -- simulated seconds to reach target_accuracy; NULL if never
    target_accuracy REAL,
    total_bytes     REAL,
    compute_share   REAL,      -- shares of the summed per-host time, in [0, 1]
    comm_share      REAL,
    idle_share      REAL,
    steps           INTEGER
);
