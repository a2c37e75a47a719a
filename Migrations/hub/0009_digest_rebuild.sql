-- The kept digest after a TRUNCATE or a data-only restore (docs/hub.md §9, §11). Migration 8's statement
-- triggers move `hub_digest_totals` on INSERT, UPDATE and DELETE, but a TRUNCATE fires none of them, and a
-- data-only `pg_restore` that also restores `hub_digest_totals` adds the dumped totals to the ones its COPY
-- already moved (twice the rows).

-- A TRUNCATE of `landmarks` or `positions` leaves that table empty: its kept totals become nothing, in the
-- truncating transaction (TRUNCATE holds the table's ACCESS EXCLUSIVE lock, so no writer of the table has
-- totals rows uncommitted). SECURITY DEFINER as the other totals functions: a role that may truncate the
-- table resets its totals without a grant on them.
CREATE FUNCTION catalog_reset_digest_totals() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT
    AS $$
BEGIN
    DELETE FROM hub_digest_totals WHERE tbl = TG_TABLE_NAME;
    RETURN NULL;
END
$$;
CREATE TRIGGER landmarks_digest_truncate AFTER TRUNCATE ON landmarks FOR EACH STATEMENT EXECUTE FUNCTION catalog_reset_digest_totals();
CREATE TRIGGER positions_digest_truncate AFTER TRUNCATE ON positions FOR EACH STATEMENT EXECUTE FUNCTION catalog_reset_digest_totals();

-- Rebuilds the kept digest from the rows (`catalog gc --hub URL --rebuild-digest`): under the push lock
-- (the key `lchub_pu` in ASCII, 7810201032161456245, which every push and `gc --hub` take), first the lanes
-- h0..h3 of every row whose stored lanes are not its hash's (written by hand or restored so; they would keep
-- the digest apart from a recomputation whatever the totals say), then `hub_digest_totals` replaced by one
-- row per table summing the stored lanes. The replacement is one statement, so it deletes exactly the totals
-- rows of the rows it sums: a writer that is not a push (a hand-written row) and commits meanwhile keeps its
-- own totals row and its rows out of both. Returns the rows summed per table and the rows whose lanes were
-- recomputed. Not granted to PUBLIC: the owner runs it, or a role it is granted to.
CREATE FUNCTION catalog_rebuild_digest_totals(OUT landmark_rows bigint, OUT position_rows bigint, OUT relaned_rows bigint)
    LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT
    AS $$
DECLARE
    n bigint;
BEGIN
    PERFORM pg_advisory_xact_lock(7810201032161456245);
    UPDATE landmarks SET h0 = catalog_hash_lane(x.h, 0), h1 = catalog_hash_lane(x.h, 1), h2 = catalog_hash_lane(x.h, 2),
                         h3 = catalog_hash_lane(x.h, 3)
        FROM (SELECT id AS key, h0 AS o0, h1 AS o1, h2 AS o2, h3 AS o3,
                     catalog_landmark_hash(id, updated_ms, counter, node, deleted, body) AS h
              FROM landmarks OFFSET 0) x
        WHERE landmarks.id = x.key
          AND (x.o0, x.o1, x.o2, x.o3) IS DISTINCT FROM
              (catalog_hash_lane(x.h, 0), catalog_hash_lane(x.h, 1), catalog_hash_lane(x.h, 2), catalog_hash_lane(x.h, 3));
    GET DIAGNOSTICS relaned_rows = ROW_COUNT;
    UPDATE positions SET h0 = catalog_hash_lane(x.h, 0), h1 = catalog_hash_lane(x.h, 1), h2 = catalog_hash_lane(x.h, 2),
                         h3 = catalog_hash_lane(x.h, 3)
        FROM (SELECT user_id AS key, h0 AS o0, h1 AS o1, h2 AS o2, h3 AS o3,
                     catalog_position_hash(user_id, updated_ms, counter, node, deleted, page, landmark_id) AS h
              FROM positions OFFSET 0) x
        WHERE positions.user_id = x.key
          AND (x.o0, x.o1, x.o2, x.o3) IS DISTINCT FROM
              (catalog_hash_lane(x.h, 0), catalog_hash_lane(x.h, 1), catalog_hash_lane(x.h, 2), catalog_hash_lane(x.h, 3));
    GET DIAGNOSTICS n = ROW_COUNT;
    relaned_rows := relaned_rows + n;
    WITH gone AS (DELETE FROM hub_digest_totals)
    INSERT INTO hub_digest_totals
        SELECT 'landmarks', count(*), coalesce(sum(h0), 0), coalesce(sum(h1), 0), coalesce(sum(h2), 0), coalesce(sum(h3), 0)
        FROM landmarks
        UNION ALL
        SELECT 'positions', count(*), coalesce(sum(h0), 0), coalesce(sum(h1), 0), coalesce(sum(h2), 0), coalesce(sum(h3), 0)
        FROM positions;
    SELECT sum(rows) INTO landmark_rows FROM hub_digest_totals WHERE tbl = 'landmarks';
    SELECT sum(rows) INTO position_rows FROM hub_digest_totals WHERE tbl = 'positions';
END
$$;
REVOKE EXECUTE ON FUNCTION catalog_rebuild_digest_totals() FROM PUBLIC;
