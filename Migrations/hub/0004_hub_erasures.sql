-- Erasures of users (docs/erasure.md): one row per erased user, by the SHA-256 of the NFC-normalised id in
-- lowercase hex (the hub never holds an erased user's id). An erasure wins over every position of its user
-- stamped at or before it: a push deletes those and refuses them later; a pull carries it to every edge.
-- `seq` is the hub's change sequence, as for rows.
CREATE TABLE hub_erasures (
    user_hash  text COLLATE "C" PRIMARY KEY,
    updated_ms bigint NOT NULL,
    counter    bigint NOT NULL CHECK (counter BETWEEN 0 AND 4294967295),
    node       text COLLATE "C" NOT NULL,
    seq        bigint NOT NULL
);
CREATE INDEX hub_erasures_seq ON hub_erasures (seq);
-- Every role that writes positions reads this table in the positions upsert (an erased user's older rows
-- are refused); a hash says nothing a role that may write positions could not learn otherwise.
GRANT SELECT ON hub_erasures TO PUBLIC;
