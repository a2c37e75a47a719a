-- The hub's kept digest (docs/repair.md §1, docs/hub.md): each row of `landmarks` and `positions` stores the
-- first 16 bytes of its row hash as four unsigned 32-bit numbers h0..h3 (h0 the first four bytes,
-- big-endian), as the edges do, and `hub_digest_totals` keeps per table the row count and the sum of each
-- lane, moved in the same transaction by every statement that writes either table. `catalog status` then
-- reads the hub's digest from the totals instead of hashing every row, and a repair sums key ranges.

-- The row hash, defined once (docs/merge-rules.md §8): SHA-256 of the row's canonical text, fields joined
-- by LF. The upserts store the lanes of it, and the recomputed digest hashes with the same functions.
-- Declared STABLE, as `convert_to` is: an SQL function is inlined into the query that calls it only when it
-- claims no more than its body (as IMMUTABLE it runs through the function executor, 4x slower at 1M rows).
CREATE FUNCTION catalog_landmark_hash(id bigint, updated_ms bigint, counter bigint, node text, deleted boolean, body text)
    RETURNS bytea LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT sha256(convert_to('L' || E'\n' || id::text || E'\n' || updated_ms::text || E'\n' || counter::text || E'\n'
                                   || node || E'\n' || CASE WHEN deleted THEN '1' ELSE '0' END || E'\n' || body, 'UTF8')) $$;
CREATE FUNCTION catalog_position_hash(user_id text, updated_ms bigint, counter bigint, node text, deleted boolean, page bigint,
                                      landmark_id bigint)
    RETURNS bytea LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT sha256(convert_to('P' || E'\n' || user_id || E'\n' || updated_ms::text || E'\n' || counter::text || E'\n'
                                   || node || E'\n' || CASE WHEN deleted THEN '1' ELSE '0' END || E'\n' || page::text || E'\n'
                                   || coalesce(landmark_id::text, ''), 'UTF8')) $$;
CREATE FUNCTION catalog_erasure_hash(user_hash text, updated_ms bigint, counter bigint, node text)
    RETURNS bytea LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT sha256(convert_to('E' || E'\n' || user_hash || E'\n' || updated_ms::text || E'\n' || counter::text || E'\n'
                                   || node, 'UTF8')) $$;
-- Lane `i` (0..3) of a hash: bytes 4i..4i+3 as an unsigned big-endian number.
CREATE FUNCTION catalog_hash_lane(h bytea, i integer)
    RETURNS bigint LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT (get_byte(h, 4 * i)::bigint << 24) | (get_byte(h, 4 * i + 1)::bigint << 16)
                 | (get_byte(h, 4 * i + 2)::bigint << 8) | get_byte(h, 4 * i + 3)::bigint $$;

ALTER TABLE landmarks ADD COLUMN h0 bigint, ADD COLUMN h1 bigint, ADD COLUMN h2 bigint, ADD COLUMN h3 bigint;
UPDATE landmarks SET h0 = catalog_hash_lane(x.h, 0), h1 = catalog_hash_lane(x.h, 1), h2 = catalog_hash_lane(x.h, 2),
                     h3 = catalog_hash_lane(x.h, 3)
    FROM (SELECT id AS key, catalog_landmark_hash(id, updated_ms, counter, node, deleted, body) AS h FROM landmarks OFFSET 0) x
    WHERE landmarks.id = x.key;
ALTER TABLE landmarks ALTER COLUMN h0 SET NOT NULL, ALTER COLUMN h1 SET NOT NULL, ALTER COLUMN h2 SET NOT NULL,
                      ALTER COLUMN h3 SET NOT NULL;

ALTER TABLE positions ADD COLUMN h0 bigint, ADD COLUMN h1 bigint, ADD COLUMN h2 bigint, ADD COLUMN h3 bigint;
UPDATE positions SET h0 = catalog_hash_lane(x.h, 0), h1 = catalog_hash_lane(x.h, 1), h2 = catalog_hash_lane(x.h, 2),
                     h3 = catalog_hash_lane(x.h, 3)
    FROM (SELECT user_id AS key, catalog_position_hash(user_id, updated_ms, counter, node, deleted, page, landmark_id) AS h
          FROM positions OFFSET 0) x
    WHERE positions.user_id = x.key;
ALTER TABLE positions ALTER COLUMN h0 SET NOT NULL, ALTER COLUMN h1 SET NOT NULL, ALTER COLUMN h2 SET NOT NULL,
                      ALTER COLUMN h3 SET NOT NULL;

-- The upserts compute the lanes in bulk. A row written by hand (an operator restoring rows, an INSERT
-- without the lanes, an UPDATE that leaves them) gets them here, one row at a time; the WHEN clauses keep
-- these functions out of the upserts' way.
CREATE FUNCTION catalog_fill_landmark_lanes() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE h bytea := catalog_landmark_hash(NEW.id, NEW.updated_ms, NEW.counter, NEW.node, NEW.deleted, NEW.body);
BEGIN
    NEW.h0 := catalog_hash_lane(h, 0); NEW.h1 := catalog_hash_lane(h, 1); NEW.h2 := catalog_hash_lane(h, 2); NEW.h3 := catalog_hash_lane(h, 3);
    RETURN NEW;
END
$$;
CREATE FUNCTION catalog_fill_position_lanes() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE h bytea := catalog_position_hash(NEW.user_id, NEW.updated_ms, NEW.counter, NEW.node, NEW.deleted, NEW.page, NEW.landmark_id);
BEGIN
    NEW.h0 := catalog_hash_lane(h, 0); NEW.h1 := catalog_hash_lane(h, 1); NEW.h2 := catalog_hash_lane(h, 2); NEW.h3 := catalog_hash_lane(h, 3);
    RETURN NEW;
END
$$;
CREATE TRIGGER landmarks_lanes_insert BEFORE INSERT ON landmarks FOR EACH ROW WHEN (NEW.h0 IS NULL)
    EXECUTE FUNCTION catalog_fill_landmark_lanes();
CREATE TRIGGER landmarks_lanes_update BEFORE UPDATE ON landmarks FOR EACH ROW WHEN (NEW.h0 IS NOT DISTINCT FROM OLD.h0)
    EXECUTE FUNCTION catalog_fill_landmark_lanes();
CREATE TRIGGER positions_lanes_insert BEFORE INSERT ON positions FOR EACH ROW WHEN (NEW.h0 IS NULL)
    EXECUTE FUNCTION catalog_fill_position_lanes();
CREATE TRIGGER positions_lanes_update BEFORE UPDATE ON positions FOR EACH ROW WHEN (NEW.h0 IS NOT DISTINCT FROM OLD.h0)
    EXECUTE FUNCTION catalog_fill_position_lanes();

-- Tombstones by stamp with their lanes: the digest at a horizon subtracts the tombstones stamped before
-- it, read from these indexes alone.
CREATE INDEX landmarks_dead ON landmarks (updated_ms) INCLUDE (h0, h1, h2, h3) WHERE deleted;
CREATE INDEX positions_dead ON positions (updated_ms) INCLUDE (h0, h1, h2, h3) WHERE deleted;

-- Per table (`landmarks`, `positions`): the row count and lane sums of every stored row, as the sum of this
-- table's rows of that table (each below 2^63 for fewer than 2^31 rows). Writers only append rows (a
-- statement's move), so concurrent writers never wait for each other here; `catalog_fold_digest_totals`
-- folds them back into one row per table once there are more than 64.
CREATE TABLE hub_digest_totals (
    tbl  text COLLATE "C" NOT NULL,
    rows bigint NOT NULL,
    s0   bigint NOT NULL,
    s1   bigint NOT NULL,
    s2   bigint NOT NULL,
    s3   bigint NOT NULL
);
INSERT INTO hub_digest_totals
    SELECT 'landmarks', count(*), coalesce(sum(h0), 0), coalesce(sum(h1), 0), coalesce(sum(h2), 0), coalesce(sum(h3), 0)
    FROM landmarks;
INSERT INTO hub_digest_totals
    SELECT 'positions', count(*), coalesce(sum(h0), 0), coalesce(sum(h1), 0), coalesce(sum(h2), 0), coalesce(sum(h3), 0)
    FROM positions;
GRANT SELECT ON hub_digest_totals TO PUBLIC;

-- Moves the totals once per statement, from its transition tables (PostgreSQL "CREATE TRIGGER",
-- REFERENCING): rows inserted add, rows deleted subtract, rows updated subtract their old lanes and add
-- the new. One aggregate per statement, in the writer's transaction, whatever writes: a push's upserts,
-- a release from the quarantine, an erasure's delete, a collection, a row written by hand. SECURITY
-- DEFINER: a role that may write the rows moves the totals without a grant on them.
CREATE FUNCTION catalog_move_digest_totals() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT
    AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO hub_digest_totals
        SELECT TG_TABLE_NAME, count(*), coalesce(sum(h0), 0), coalesce(sum(h1), 0), coalesce(sum(h2), 0), coalesce(sum(h3), 0)
        FROM new_rows HAVING count(*) > 0;
    ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO hub_digest_totals
        SELECT TG_TABLE_NAME, 0, coalesce(sum(h0), 0), coalesce(sum(h1), 0), coalesce(sum(h2), 0), coalesce(sum(h3), 0)
        FROM (SELECT h0, h1, h2, h3 FROM new_rows UNION ALL SELECT -h0, -h1, -h2, -h3 FROM old_rows) u HAVING count(*) > 0;
    ELSE
        INSERT INTO hub_digest_totals
        SELECT TG_TABLE_NAME, -count(*), -coalesce(sum(h0), 0), -coalesce(sum(h1), 0), -coalesce(sum(h2), 0), -coalesce(sum(h3), 0)
        FROM old_rows HAVING count(*) > 0;
    END IF;
    RETURN NULL;
END
$$;

-- Folds the totals' rows into one per table when there are more than 64 (a push calls it, under the push
-- lock). Rows a concurrent writer appends meanwhile are not seen by the DELETE and stay; a concurrent
-- fold deletes only rows this one did not, so the sums are kept either way.
CREATE FUNCTION catalog_fold_digest_totals() RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT
    AS $$
BEGIN
    IF (SELECT count(*) FROM hub_digest_totals) > 64 THEN
        WITH gone AS (DELETE FROM hub_digest_totals RETURNING *)
        INSERT INTO hub_digest_totals
        SELECT tbl, sum(rows)::bigint, sum(s0)::bigint, sum(s1)::bigint, sum(s2)::bigint, sum(s3)::bigint FROM gone GROUP BY tbl;
    END IF;
END
$$;
GRANT EXECUTE ON FUNCTION catalog_fold_digest_totals() TO PUBLIC;
CREATE TRIGGER landmarks_digest_insert AFTER INSERT ON landmarks REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION catalog_move_digest_totals();
CREATE TRIGGER landmarks_digest_update AFTER UPDATE ON landmarks REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION catalog_move_digest_totals();
CREATE TRIGGER landmarks_digest_delete AFTER DELETE ON landmarks REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION catalog_move_digest_totals();
CREATE TRIGGER positions_digest_insert AFTER INSERT ON positions REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION catalog_move_digest_totals();
CREATE TRIGGER positions_digest_update AFTER UPDATE ON positions REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION catalog_move_digest_totals();
CREATE TRIGGER positions_digest_delete AFTER DELETE ON positions REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION catalog_move_digest_totals();
