-- Landmarks, the database's node identity and its hybrid logical clock.

-- Key/value facts about this database. 'node' is the stable node id used in last-writer-wins stamps.
CREATE TABLE catalog_meta (
    key   TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
) STRICT;

INSERT INTO catalog_meta (key, value) VALUES ('node', 'n-' || lower(hex(randomblob(6))));

-- The hybrid logical clock's last issued stamp (Kulkarni et al., 2014): one row.
CREATE TABLE hlc_clock (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    wall_ms INTEGER NOT NULL,   -- physical part, ms since 1970-01-01 UTC
    counter INTEGER NOT NULL    -- logical part
) STRICT;

INSERT INTO hlc_clock (id, wall_ms, counter) VALUES (1, 0, 0);

-- One row per landmark id. Fields of landmarkData.json, unknown keys kept as a JSON object in `extra`,
-- and the last-writer-wins stamp of the row's last change (updated_ms, counter, node).
-- deleted = 1 is a tombstone (import --prune, or a merged deletion).
CREATE TABLE landmarks (
    id          INTEGER PRIMARY KEY NOT NULL,
    name        TEXT NOT NULL CHECK (name <> ''),
    category    TEXT,
    city        TEXT,
    state       TEXT,
    park        TEXT,
    description TEXT,
    image_name  TEXT,
    is_featured INTEGER NOT NULL DEFAULT 0 CHECK (is_featured IN (0, 1)),
    is_favorite INTEGER NOT NULL DEFAULT 0 CHECK (is_favorite IN (0, 1)),
    latitude    REAL NOT NULL CHECK (latitude BETWEEN -90 AND 90),
    longitude   REAL NOT NULL CHECK (longitude BETWEEN -180 AND 180),
    extra       TEXT,
    updated_ms  INTEGER NOT NULL,
    counter     INTEGER NOT NULL DEFAULT 0,
    node        TEXT NOT NULL,
    deleted     INTEGER NOT NULL DEFAULT 0 CHECK (deleted IN (0, 1))
) STRICT;

-- The carousel: featured, live landmarks in id order. Partial, so it stays small as the catalog grows;
-- `featured` reads it in order with no sort step.
CREATE INDEX landmarks_featured ON landmarks (id) WHERE is_featured = 1 AND deleted = 0;

-- Tombstones, so counting them (and finding them) never scans the table.
CREATE INDEX landmarks_tombstones ON landmarks (id) WHERE deleted = 1;
