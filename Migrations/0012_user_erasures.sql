-- Erasures of users (docs/erasure.md): one record per erased user, stamped for last-writer-wins like a row.
-- An erasure wins over every row of its user stamped at or before it: applying it deletes them, and such a
-- row arriving later is refused as erased. The user is kept only as `user_hash`, the SHA-256 of the
-- NFC-normalised user id in lowercase hex, so no file holds the erased user's id; `seq` is the local change
-- sequence (erasures travel in snapshots, logs and the hub like rows).
CREATE TABLE user_erasures (
    user_hash  TEXT PRIMARY KEY NOT NULL,
    updated_ms INTEGER NOT NULL,
    counter    INTEGER NOT NULL DEFAULT 0,
    node       TEXT NOT NULL,
    seq        INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
CREATE INDEX user_erasures_seq ON user_erasures (seq);

-- What a merge refused: rows of an erased user (`erased`) and rows stamped before the collection horizon for
-- a key with no row (`expired`), and the erasure records a source carried.
ALTER TABLE sync_runs ADD COLUMN erasures_seen INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sync_runs ADD COLUMN erasures_applied INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sync_runs ADD COLUMN erased INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sync_runs ADD COLUMN expired INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sync_run_sources ADD COLUMN erasures_seen INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sync_run_sources ADD COLUMN erasures_applied INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sync_run_sources ADD COLUMN erased INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sync_run_sources ADD COLUMN expired INTEGER NOT NULL DEFAULT 0;
