-- The kept state digest (docs/repair.md §1): each row carries the first 16 bytes of its row hash as four
-- 32-bit unsigned lanes (h0 the first, big-endian), and digest_totals keeps, per table, the row count and
-- the sum of each lane. Sums of 32-bit lanes cannot overflow a 64-bit integer below 2^31 rows; the 64-bit
-- digest lanes are (s0 * 2^32 + s1) and (s2 * 2^32 + s3), modulo 2^64.
-- Erasure records (user_erasures) are few and carry no hash columns: their sums are kept in the row
-- 'erasures', moved by the statements that store and collect them.
-- The writers set h0..h3 and move the sums in the write's own transaction (a trigger per row cost more
-- than the whole import it kept: docs/repair.md §1). Rows stored before this migration are hashed once by the store when it next
-- opens the database for writing (SQL cannot compute the hash): `backfilled` = 0 until then.
ALTER TABLE landmarks ADD COLUMN h0 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE landmarks ADD COLUMN h1 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE landmarks ADD COLUMN h2 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE landmarks ADD COLUMN h3 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE positions ADD COLUMN h0 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE positions ADD COLUMN h1 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE positions ADD COLUMN h2 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE positions ADD COLUMN h3 INTEGER NOT NULL DEFAULT 0;
CREATE TABLE digest_totals (
    table_name TEXT PRIMARY KEY NOT NULL,
    rows       INTEGER NOT NULL DEFAULT 0,
    s0         INTEGER NOT NULL DEFAULT 0,
    s1         INTEGER NOT NULL DEFAULT 0,
    s2         INTEGER NOT NULL DEFAULT 0,
    s3         INTEGER NOT NULL DEFAULT 0,
    backfilled INTEGER NOT NULL DEFAULT 0
) STRICT;
INSERT INTO digest_totals (table_name, rows, backfilled) SELECT 'landmarks', count(*), count(*) = 0 FROM landmarks;
INSERT INTO digest_totals (table_name, rows, backfilled) SELECT 'positions', count(*), count(*) = 0 FROM positions;
INSERT INTO digest_totals (table_name, rows, backfilled) SELECT 'erasures', count(*), count(*) = 0 FROM user_erasures;
-- The digest at a horizon leaves out the tombstones and erasure records stamped below it (docs/erasure.md
-- §5): these find them and sum their hashes without reading the live rows or the table (`deleted`
-- is among the columns so that SQLite reads the index alone).
CREATE INDEX landmarks_dead ON landmarks (updated_ms, h0, h1, h2, h3, deleted) WHERE deleted = 1;
CREATE INDEX positions_dead ON positions (updated_ms, h0, h1, h2, h3, deleted) WHERE deleted = 1;
CREATE INDEX user_erasures_stamp ON user_erasures (updated_ms);
