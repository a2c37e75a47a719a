-- Snapshot logs this database publishes (SPEC §10): per directory, the generation and change sequence
-- number its manifest covers, and the files the manifest stopped naming (removed after a grace period,
-- so a peer that read the previous manifest can still fetch them).
CREATE TABLE log_publications (
    directory    TEXT PRIMARY KEY NOT NULL,   -- the directory's real path
    generation   TEXT NOT NULL,
    through      INTEGER NOT NULL,
    published_at TEXT NOT NULL                -- UTC, RFC 3339
) STRICT;

CREATE TABLE log_retired_files (
    directory  TEXT NOT NULL,
    name       TEXT NOT NULL,
    retired_at INTEGER NOT NULL,              -- ms since the epoch, UTC
    PRIMARY KEY (directory, name)
) STRICT;
