-- Sync: saved remotes, per-source HTTP validators, the run ledger and the quarantine.

-- Remotes saved with `catalog remote add NAME URL`; `catalog sync` with no SOURCE syncs them all.
CREATE TABLE sync_remotes (
    name     TEXT PRIMARY KEY NOT NULL,
    url      TEXT NOT NULL,
    added_at TEXT NOT NULL
) STRICT;

-- Per source (URL or path): the validators for conditional GET (RFC 9110 §13) and the last good sync.
CREATE TABLE sync_sources (
    source          TEXT PRIMARY KEY NOT NULL,
    etag            TEXT,
    last_modified   TEXT,
    last_success_at TEXT,
    last_outcome    TEXT
) STRICT;

-- One row per `catalog sync` run, written after the run ends (also when it failed).
CREATE TABLE sync_runs (
    id                 INTEGER PRIMARY KEY,
    started_at         TEXT NOT NULL,
    finished_at        TEXT NOT NULL,
    sources            TEXT NOT NULL,     -- JSON array of the sources
    outcome            TEXT NOT NULL,     -- ok | not-modified | dry-run | failed
    exit_status        INTEGER NOT NULL,
    landmarks_applied  INTEGER NOT NULL DEFAULT 0,
    positions_applied  INTEGER NOT NULL DEFAULT 0,
    stale              INTEGER NOT NULL DEFAULT 0,
    ties               INTEGER NOT NULL DEFAULT 0,
    quarantined        INTEGER NOT NULL DEFAULT 0,
    message            TEXT
) STRICT;

-- Rows stamped too far ahead of this machine's clock (--max-drift): kept here, never applied.
CREATE TABLE sync_quarantine (
    id          INTEGER PRIMARY KEY,
    received_at TEXT NOT NULL,
    source      TEXT NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('landmark', 'position')),
    row_key     TEXT NOT NULL,
    updated_ms  INTEGER NOT NULL,
    counter     INTEGER NOT NULL,
    node        TEXT NOT NULL,
    row_json    TEXT NOT NULL,
    reason      TEXT NOT NULL,
    UNIQUE (kind, row_key, updated_ms, counter, node)   -- a row delivered again is kept once
) STRICT;
