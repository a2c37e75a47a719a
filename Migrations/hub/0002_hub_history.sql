-- The hub's history (docs/hub.md, "Restoring a hub"): one row per push that wrote rows, holding the last
-- hub sequence number it took and a random token. Pushes number their rows and insert this row under the
-- push lock, so rows appear in sequence order and commit in that order. An edge keeps, with its pull
-- cursor, the newest row at or below that cursor; at its next sync it checks that the hub still holds that
-- row with that token. A hub restored from a backup (or replaced) does not, even after other edges pushed
-- since and took the same numbers again with other tokens: the edge then pushes everything it has and
-- pulls from the start.
CREATE TABLE hub_history (
    seq        bigint PRIMARY KEY,             -- the last hub_change_seq number the push took
    token      text NOT NULL,                  -- random, made by the hub
    node       text COLLATE "C" NOT NULL,      -- the pushing edge ('' for the baseline row)
    pushed_at  timestamptz NOT NULL DEFAULT now()
);
-- A hub that already holds rows gets one baseline row at its current number, so edges that synced
-- before this migration can be checked from their next pull on.
INSERT INTO hub_history (seq, token, node)
SELECT last_value, gen_random_uuid()::text, '' FROM hub_change_seq WHERE is_called;
