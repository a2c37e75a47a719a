-- The kept state digest (docs/repair.md §1): each row carries the first 16 bytes of its row hash as four
-- 32-bit unsigned lanes (h0 the first, big-endian), and digest_totals keeps, per table, the row count and
-- the sum of each lane. Sums of 32-bit lanes cannot overflow a 64-bit integer below 2^31 rows; the 64-bit
-- digest lanes are (s0 * 2^32 + s1) and (s2 * 2^32 + s3), modulo 2^64.
-- The triggers keep the sums in the write's own transaction, whatever statement wrote the row; the
-- writers set h0..h3. Rows stored before this migration are hashed once by the store when it next
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
CREATE TRIGGER landmarks_digest_insert AFTER INSERT ON landmarks BEGIN
    UPDATE digest_totals SET rows = rows + 1, s0 = s0 + new.h0, s1 = s1 + new.h1, s2 = s2 + new.h2, s3 = s3 + new.h3
    WHERE table_name = 'landmarks';
END;
CREATE TRIGGER landmarks_digest_update AFTER UPDATE OF h0, h1, h2, h3 ON landmarks BEGIN
    UPDATE digest_totals SET s0 = s0 - old.h0 + new.h0, s1 = s1 - old.h1 + new.h1, s2 = s2 - old.h2 + new.h2, s3 = s3 - old.h3 + new.h3
    WHERE table_name = 'landmarks';
END;
CREATE TRIGGER landmarks_digest_delete AFTER DELETE ON landmarks BEGIN
    UPDATE digest_totals SET rows = rows - 1, s0 = s0 - old.h0, s1 = s1 - old.h1, s2 = s2 - old.h2, s3 = s3 - old.h3
    WHERE table_name = 'landmarks';
END;
CREATE TRIGGER positions_digest_insert AFTER INSERT ON positions BEGIN
    UPDATE digest_totals SET rows = rows + 1, s0 = s0 + new.h0, s1 = s1 + new.h1, s2 = s2 + new.h2, s3 = s3 + new.h3
    WHERE table_name = 'positions';
END;
CREATE TRIGGER positions_digest_update AFTER UPDATE OF h0, h1, h2, h3 ON positions BEGIN
    UPDATE digest_totals SET s0 = s0 - old.h0 + new.h0, s1 = s1 - old.h1 + new.h1, s2 = s2 - old.h2 + new.h2, s3 = s3 - old.h3 + new.h3
    WHERE table_name = 'positions';
END;
CREATE TRIGGER positions_digest_delete AFTER DELETE ON positions BEGIN
    UPDATE digest_totals SET rows = rows - 1, s0 = s0 - old.h0, s1 = s1 - old.h1, s2 = s2 - old.h2, s3 = s3 - old.h3
    WHERE table_name = 'positions';
END;
