-- Per-user carousel positions: which page of the featured carousel each user is on.
-- One row per user (NFC-normalised id), stamped for last-writer-wins (updated_ms, counter, node).
-- `page` and `landmark_id` are what the user was shown when the row was written; the current page is
-- resolved when read (the landmark's index among the featured ones, else the page clamped into range).
-- No foreign key to landmarks: snapshots arrive in any order, so a position may name a landmark this
-- database does not have yet, and an import must never delete or rewrite positions.
-- deleted = 1 is a tombstone (`position clear`), kept so the deletion takes part in sync.
-- WITHOUT ROWID: the rows are clustered by user id, so an upsert is one B-tree descent, not two.
CREATE TABLE positions (
    user_id     TEXT PRIMARY KEY NOT NULL,
    page        INTEGER NOT NULL CHECK (page >= 0),
    landmark_id INTEGER,
    updated_ms  INTEGER NOT NULL,
    counter     INTEGER NOT NULL DEFAULT 0,
    node        TEXT NOT NULL,
    deleted     INTEGER NOT NULL DEFAULT 0 CHECK (deleted IN (0, 1))
) STRICT, WITHOUT ROWID;
