-- dtsim results database, schema version 9 (version 1 lacked the memory table, version 2
-- the privacy and clients tables, version 3 the 'stalled' and 'collapsed' statuses,
-- version 4 the messages table, version 5 the energy table, version 6 the evaluations'
-- perplexity, version 7 the weight of the workers, memory and links rows, version 8 the
-- breakdown table; dtsim brings an older file up to date when it opens one).
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
-- A column with a unit says it first in its comment, in brackets ("-- [s] simulated seconds"):
-- in a table the column that the line defines, in a view the one whose name ends the line
-- ("s.sim_time," "... AS throughput,"). `dtsim export` reads them from here for its CSV
-- headers ("sim_time (s)"); ids, counts, names and fractions have none.

-- 'dtsi' in ASCII: tells a dtsim database from any other SQLite file.
PRAGMA application_id = 1685353321;
PRAGMA user_version = 9;

-- One row per run (one expanded scenario with one seed).
CREATE TABLE runs (
    id              INTEGER PRIMARY KEY,
    name            TEXT,
    strategy        TEXT,
    -- running until the writer ends it; interrupted when the writer vanished (killed, crashed
    -- machine) or stopped on a signal; diverged when the loss became NaN or Inf; stalled when
    -- the watchdog ended it (no step for run.stall_after while faults were handled); collapsed
    -- when its last run.collapse_after evaluations sat at chance.
    status          TEXT NOT NULL DEFAULT 'running'
                    CHECK (status IN ('running', 'finished', 'failed', 'diverged', 'interrupted', 'stalled', 'collapsed')),
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
    ended           TEXT,
    -- Runs expanded from one scenario's [sweep] share a sweep id; index is the position of
    -- the run in the expansion (0 for a scenario without a sweep).
    sweep           TEXT,
    sweep_index     INTEGER
);
CREATE INDEX runs_status ON runs (status);
CREATE INDEX runs_sweep ON runs (sweep, sweep_index);

-- Every resolved scenario key of a run ("cluster.bandwidth", ...): its text as written in
-- the resolved configuration and, when it is a plain number or a number with a unit, its
-- value in base units (bytes/s, seconds, FLOP/s), for selecting and plotting runs.
CREATE TABLE params (
    run    INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    key    TEXT NOT NULL,
    value  TEXT,
    number REAL,
    PRIMARY KEY (run, key)
) WITHOUT ROWID;

-- Test-set evaluations at checkpoints: the curves accuracy vs simulated time, vs bytes.
-- A language model's evaluation (text data, next-token prediction) has a perplexity: its
-- test_loss is then the mean next-token cross-entropy (nats), test_acc the next-token
-- accuracy, and the figures label them so.
CREATE TABLE evals (
    run       INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    sim_time  REAL,      -- [s] simulated seconds since the start of the run
    step      INTEGER,   -- optimizer steps (rounds for federated strategies) so far
    samples   REAL,      -- training samples processed so far, all workers together
    bytes     REAL,      -- [B] bytes sent over the network so far, all hosts together
    test_loss REAL,      -- NULL if NaN
    test_acc  REAL,      -- in [0, 1]; NULL if NaN
    perplexity REAL      -- next-token perplexity, exp(test_loss); NULL for a classifier (or NaN)
);
CREATE INDEX evals_run ON evals (run, sim_time);

-- Per host and role, totals over the run: the time breakdown and the per-worker timeline.
-- A row stands for `weight` hosts (workers and memory alike) whose figures are all the same:
-- the hosts a strategy simulates as one (strategy.tensor_members or data_members = one),
-- symmetric replicas; stored once under the first one's rank and host (run.group_rows).
-- Counts and sums over hosts weight each row by it: sum(weight) hosts, sum(weight * comm_s)
-- seconds; a maximum or a host's own figure needs none. 1: the row is its host's alone.
CREATE TABLE workers (
    run        INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    worker     INTEGER NOT NULL,   -- index within its role
    host       TEXT,               -- SimGrid host name
    role       TEXT NOT NULL,      -- worker, server or client
    compute_s  REAL,               -- [s] simulated seconds computing
    comm_s     REAL,               -- [s] simulated seconds communicating
    idle_s     REAL,               -- [s] simulated seconds waiting for others
    bytes_sent REAL,               -- [B]
    bytes_recv REAL,               -- [B]
    steps      INTEGER,            -- local steps taken
    weight     INTEGER NOT NULL DEFAULT 1   -- [hosts] the hosts this row stands for (above)
);
CREATE INDEX workers_run ON workers (run);

-- What each host holds for training, in bytes: its parameters, gradients, optimizer state
-- (SGD momentum) and the activations kept for the backward pass (per step at its peak;
-- NULL where it is not known, as the activations of a timing-only model profile).
CREATE TABLE memory (
    run         INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    worker      INTEGER NOT NULL,   -- index within its role
    role        TEXT NOT NULL,      -- worker, server or client
    params      REAL,           -- [B]
    grads       REAL,           -- [B]
    optimizer   REAL,           -- [B]
    activations REAL,           -- [B]
    weight      INTEGER NOT NULL DEFAULT 1   -- [hosts] the hosts this row stands for (workers)
);
CREATE INDEX memory_run ON memory (run);

-- Histogram of the staleness of applied gradients (asynchronous parameter server):
-- count gradients were applied staleness versions after the parameters they were computed on.
-- Adding to an existing bucket adds to its count.
CREATE TABLE staleness (
    run       INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    staleness INTEGER NOT NULL,
    count     INTEGER NOT NULL,
    PRIMARY KEY (run, staleness)
) WITHOUT ROWID;

-- Client-level differential privacy (fedavg with dp_clip > 0): the epsilon the RDP accountant
-- gives at delta after each round (NULL: infinite, no noise).
CREATE TABLE privacy (
    run     INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    round   INTEGER NOT NULL,   -- rounds done
    epsilon REAL,
    delta   REAL NOT NULL,
    PRIMARY KEY (run, round)
) WITHOUT ROWID;

-- Per federated client at the end of a run: how often it took part and how the final model
-- does on its own held-out samples (strategy.client_holdout; NULL without them).
CREATE TABLE clients (
    run       INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    client    INTEGER NOT NULL,
    rounds    INTEGER NOT NULL,  -- rounds its update was aggregated in
    samples   INTEGER,           -- training samples it holds
    held_out  INTEGER,           -- samples of its own kept out of training, evaluated on
    test_acc  REAL,
    test_loss REAL,
    byzantine INTEGER NOT NULL,  -- 1: one of faults.byzantine's attackers
    PRIMARY KEY (run, client)
) WITHOUT ROWID;

-- Fairness across a federated run's clients: how often they took part (every client) and how
-- the final model does on the held-out samples of the honest clients that have them: mean,
-- 10th and 90th percentile (nearest rank, lower: the value at rank 1 + floor((n - 1) / 10)
-- from either end), extremes and spread (max - min).
CREATE VIEW client_fairness AS
WITH ranked AS (
    SELECT run, test_acc,
           row_number() OVER (PARTITION BY run ORDER BY test_acc) AS rk,
           count(*) OVER (PARTITION BY run) AS n
      FROM clients WHERE test_acc IS NOT NULL AND byzantine = 0),
acc AS (
    SELECT run, max(n) AS evaluated, avg(test_acc) AS mean_acc,
           max(CASE WHEN rk = 1 + (n - 1) / 10 THEN test_acc END) AS p10_acc,
           max(CASE WHEN rk = n - (n - 1) / 10 THEN test_acc END) AS p90_acc,
           min(test_acc) AS min_acc, max(test_acc) AS max_acc,
           max(test_acc) - min(test_acc) AS spread
      FROM ranked GROUP BY run),
part AS (
    SELECT run, count(*) AS clients, sum(byzantine) AS byzantine, min(rounds) AS min_rounds,
           avg(rounds) AS mean_rounds, max(rounds) AS max_rounds,
           sum(rounds = 0) AS never_aggregated
      FROM clients GROUP BY run)
SELECT part.*, acc.evaluated, acc.mean_acc, acc.p10_acc, acc.p90_acc, acc.min_acc, acc.max_acc,
       acc.spread
  FROM part LEFT JOIN acc USING (run);

-- Per client (or worker) label histograms of the data partition: how non-IID it is.
-- Adding to an existing (client, label) adds to its count.
CREATE TABLE label_hist (
    run    INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    client INTEGER NOT NULL,
    label  INTEGER NOT NULL,
    count  INTEGER NOT NULL,
    PRIMARY KEY (run, client, label)
) WITHOUT ROWID;

-- What each host was doing over a window of simulated time at the start of the run
-- (run.timeline_window): one row per interval of computing, communicating or waiting.
CREATE TABLE timeline (
    run   INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    host  TEXT NOT NULL,      -- SimGrid host name
    role  TEXT NOT NULL,      -- worker, server or client
    rank  INTEGER NOT NULL,   -- index within its role
    state TEXT NOT NULL CHECK (state IN ('compute', 'comm', 'idle')),
    start REAL NOT NULL,      -- [s] simulated seconds
    end   REAL NOT NULL       -- [s]
);
CREATE INDEX timeline_run ON timeline (run, role, rank, start);

-- The messages delivered within the timeline's window, sender to receiver (each named as in
-- the timeline): the flows of `dtsim export --trace`.
CREATE TABLE messages (
    run      INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    src_host TEXT NOT NULL,
    src_role TEXT NOT NULL,
    src_rank INTEGER NOT NULL,
    dst_host TEXT NOT NULL,
    dst_role TEXT NOT NULL,
    dst_rank INTEGER NOT NULL,
    sent     REAL NOT NULL,   -- [s] simulated seconds: the sender posted it
    start    REAL NOT NULL,   -- [s] the receiver's transfer began (its comm interval starts)
    done     REAL NOT NULL,   -- [s] the receiver had it
    bytes    REAL NOT NULL    -- [B]
);
CREATE INDEX messages_run ON messages (run, sent);

-- Bytes each network link carried over the run (sums over the routes of every message).
-- A row stands for `weight` links that carried the same bytes each, named by the first of
-- them in name order (run.group_rows, as the workers rows).
CREATE TABLE links (
    run    INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    link   TEXT NOT NULL,
    bytes  REAL NOT NULL,   -- [B]
    weight INTEGER NOT NULL DEFAULT 1,   -- [links] the links this row stands for
    PRIMARY KEY (run, link)
) WITHOUT ROWID;

-- Simulated faults and the reactions to them, in simulated time order.
CREATE TABLE faults (
    run      INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    sim_time REAL NOT NULL,   -- [s]
    kind     TEXT NOT NULL,   -- e.g. host-crash, host-recover, link-down, timeout, rejoin
    target   TEXT,            -- host or link name
    detail   TEXT
);
CREATE INDEX faults_run ON faults (run, sim_time);

-- One row per ended run: the figures of the summary table.
CREATE TABLE summary (
    run             INTEGER PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    final_accuracy  REAL,
    final_loss      REAL,
    sim_time        REAL,      -- [s] simulated seconds, whole run
    time_to_target  REAL,      -- [s] simulated seconds to reach target_accuracy; NULL if never
    target_accuracy REAL,
    total_bytes     REAL,      -- [B]
    compute_share   REAL,      -- shares of the summed per-host time, in [0, 1]
    comm_share      REAL,
    idle_share      REAL,
    steps           INTEGER
);

-- One row per ended run: energy and cost. Hosts draw their device's power_max while they
-- compute and power_idle otherwise (communication and waiting included): SimGrid's host
-- energy plugin. Each network port draws cluster.link_power for the whole run, busy or not.
-- Dollars are hosts x simulated hours x cluster.price_per_device_hour; NULL without a price,
-- joules NULL for a device without power figures (custom, or a file that gives none).
CREATE TABLE energy (
    run                INTEGER PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    hosts              INTEGER,   -- hosts charged: workers and servers
    host_joules        REAL,      -- [J] their devices
    link_ports         INTEGER,   -- network ports charged
    link_joules        REAL,      -- [J] ports x cluster.link_power x sim_time
    joules_per_step    REAL,      -- [J] (host + link) per global step (round for fedavg)
    joules_per_sample  REAL,      -- [J] (host + link) per training sample
    dollars            REAL,      -- [USD] for the whole run
    dollars_per_sample REAL,      -- [USD]
    dollars_to_target  REAL       -- [USD] until run.target_accuracy; NULL if never reached
);

-- One row per ended run and part of its step (a round for the federated strategies): the
-- mean over the trainers (workers, a federated run's client hosts; a pipeline's every stage
-- and member) of the simulated seconds each spent on the part, per step (per round). Every
-- moment of a trainer's run is in one part, so a run's parts sum to its summary's
-- sim_time / steps. The parts: compute (forward and backward passes), recompute (the share of
-- the compute that model.recompute's FLOPs make), optimizer (the update's work where the
-- trainer is charged for it: SCAFFOLD's control variates; a server's update is its workers'
-- wait), and the communication the trainer waited on, not what ran behind its compute:
-- tensor (tensor groups), context (ring attention), expert (all-to-alls), pipeline (the
-- activations and gradients between stages), data (the replicas' collectives, ZeRO's, a
-- parameter server's push and pull, a federated client's upload and download); bubble (a
-- stage waiting for its neighbour's activations or gradients), wait (waiting for any other
-- peer, and after its own end until the run's). Runs stored before version 8 have none.
CREATE TABLE breakdown (
    run     INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    part    TEXT NOT NULL,   -- compute, recompute, optimizer, tensor, context, expert, pipeline, data, bubble, wait
    seconds REAL NOT NULL,   -- [s] simulated seconds of the part per step (per round)
    PRIMARY KEY (run, part)
) WITHOUT ROWID;

-- The summary with the sweep's context: throughput (training samples per simulated second)
-- and scaling efficiency against the single-worker run of the same sweep when there is one:
-- throughput / (workers x the single run's throughput). Computed when read, so it is right
-- whatever order a parallel sweep finished its runs in.
CREATE VIEW run_summary AS
SELECT r.id AS run, r.name, r.strategy, r.status, r.sweep, r.sweep_index,
       w.number AS workers,
       b.number AS bandwidth,                                -- [B/s]
       s.final_accuracy, s.final_loss,
       s.sim_time,                                           -- [s]
       s.time_to_target,                                     -- [s]
       s.target_accuracy,
       s.total_bytes,                                        -- [B]
       s.compute_share, s.comm_share, s.idle_share, s.steps,
       (SELECT max(e.samples) FROM evals e WHERE e.run = r.id) / s.sim_time
         AS throughput,                                      -- [samples/s]
       (SELECT max(e.samples) FROM evals e WHERE e.run = r.id) / s.sim_time
         / (CASE WHEN r.strategy = 'single' THEN 1 ELSE w.number END)
         / (SELECT max(e1.samples) / s1.sim_time
              FROM runs r1 JOIN summary s1 ON s1.run = r1.id JOIN evals e1 ON e1.run = r1.id
             WHERE r1.sweep = r.sweep AND r1.strategy = 'single' AND r1.status = 'finished')
         AS scaling_efficiency
  FROM runs r
  JOIN summary s ON s.run = r.id
  LEFT JOIN params w ON w.run = r.id AND w.key = 'cluster.workers'
  LEFT JOIN params b ON b.run = r.id AND b.key = 'cluster.bandwidth';
