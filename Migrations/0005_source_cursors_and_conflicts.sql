-- Sources behind one protocol: one opaque cursor per source (validators, a log's generation and
-- position, a hub's push and pull positions) replaces the HTTP-only validator columns; each source
-- keeps its last attempt and error, since each source now stands alone in a run.
ALTER TABLE sync_sources ADD COLUMN cursor TEXT;
UPDATE sync_sources SET cursor = json_object('etag', etag, 'lastModified', last_modified)
WHERE etag IS NOT NULL OR last_modified IS NOT NULL;
ALTER TABLE sync_sources DROP COLUMN etag;
ALTER TABLE sync_sources DROP COLUMN last_modified;
ALTER TABLE sync_sources ADD COLUMN kind TEXT;              -- file | stdin | http | log | hub
ALTER TABLE sync_sources ADD COLUMN last_attempt_at TEXT;   -- UTC, RFC 3339
ALTER TABLE sync_sources ADD COLUMN last_status INTEGER;    -- exit status of the last attempt (0 = good)
ALTER TABLE sync_sources ADD COLUMN last_error TEXT;        -- message of the last failure, NULL after a good sync

-- Per source and run: what happened (the run ledger's detail).
CREATE TABLE sync_run_sources (
    run_id            INTEGER NOT NULL REFERENCES sync_runs (id) ON DELETE CASCADE,
    position          INTEGER NOT NULL,   -- the source's place in the run
    source            TEXT NOT NULL,      -- display name (never a password)
    outcome           TEXT NOT NULL,      -- merged | not-modified | failed | published
    exit_status       INTEGER NOT NULL,
    bytes             INTEGER NOT NULL DEFAULT 0,
    landmarks_seen    INTEGER NOT NULL DEFAULT 0,
    landmarks_applied INTEGER NOT NULL DEFAULT 0,
    positions_seen    INTEGER NOT NULL DEFAULT 0,
    positions_applied INTEGER NOT NULL DEFAULT 0,
    stale             INTEGER NOT NULL DEFAULT 0,
    ties              INTEGER NOT NULL DEFAULT 0,
    quarantined       INTEGER NOT NULL DEFAULT 0,
    duration_ms       INTEGER NOT NULL DEFAULT 0,
    message           TEXT,
    PRIMARY KEY (run_id, position)
) STRICT;

ALTER TABLE sync_runs ADD COLUMN duration_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sync_runs ADD COLUMN landmarks_seen INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sync_runs ADD COLUMN positions_seen INTEGER NOT NULL DEFAULT 0;

-- Ties settled by the fixed rule (equal stamps, different content): both sides, kept for
-- `catalog conflicts`; the same tie settled the same way again is recorded (and reported) once.
CREATE TABLE sync_conflicts (
    id          INTEGER PRIMARY KEY,
    detected_at TEXT NOT NULL,
    source      TEXT NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('landmark', 'position')),
    row_key     TEXT NOT NULL,
    updated_ms  INTEGER NOT NULL,
    counter     INTEGER NOT NULL,
    node        TEXT NOT NULL,
    winner_json TEXT NOT NULL,
    loser_json  TEXT NOT NULL,
    rule        TEXT NOT NULL,
    UNIQUE (kind, row_key, updated_ms, counter, node, loser_json)
) STRICT;
CREATE INDEX sync_conflicts_detected ON sync_conflicts (detected_at);

-- Kept unknown keys that collide with snapshot fields would be written twice in one snapshot object;
-- imports now refuse them, and rows stored before lose them here.
UPDATE landmarks SET extra = nullif(json_remove(extra, '$.updatedAt', '$.counter', '$.node', '$.deleted'), '{}')
WHERE extra IS NOT NULL
  AND (json_type(extra, '$.updatedAt') IS NOT NULL OR json_type(extra, '$.counter') IS NOT NULL
       OR json_type(extra, '$.node') IS NOT NULL OR json_type(extra, '$.deleted') IS NOT NULL);
