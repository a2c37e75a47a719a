-- Positions found by their user's hash (docs/erasure.md §2): a pushed erasure names its user only by the
-- SHA-256 of the NFC-normalised id's UTF-8 bytes in lowercase hex, and deleting the user's older position
-- scanned `positions` hashing every id, under the push lock. An expression index needs an IMMUTABLE
-- function, and `convert_to` is only STABLE (an encoding conversion could in principle change); from UTF8
-- text to UTF8 bytes it is the identity, so this wrapper is IMMUTABLE in fact. The hub's pushes delete by
-- `catalog_user_hash(user_id) = $1`, which this index answers.
CREATE FUNCTION catalog_user_hash(user_id text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT encode(sha256(convert_to(user_id, 'UTF8')), 'hex') $$;
CREATE INDEX positions_user_hash ON positions (catalog_user_hash(user_id));
