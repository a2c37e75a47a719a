-- The hub's own settings, one row per key (docs/erasure.md §7). `gc_horizon_ms`: the horizon the hub was
-- collected up to by `catalog gc --hub` (ms since 1970-01-01 UTC, 0 before any collection); it only moves
-- forward. The upserts refuse, as expired, a pushed row stamped before it for a key the hub has no row for.
CREATE TABLE hub_meta (
    key   text COLLATE "C" PRIMARY KEY,
    value bigint NOT NULL
);
INSERT INTO hub_meta (key, value) VALUES ('gc_horizon_ms', 0);
-- Every role that pushes reads the horizon in the upserts, and status reads it for the digest.
GRANT SELECT ON hub_meta TO PUBLIC;
