-- The change sequence (SPEC §7): every row change this database applies takes the next number, so
-- "what changed since N" is an index range, never a scan. One sequence across both tables; the next
-- number is one more than the largest in use (rows are never deleted, so it only grows).
-- Existing rows are numbered once here: landmarks in id order, then positions in user order.
ALTER TABLE landmarks ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;
ALTER TABLE positions ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;

UPDATE landmarks SET seq = numbered.n
FROM (SELECT id AS numbered_id, row_number() OVER (ORDER BY id) AS n FROM landmarks) AS numbered
WHERE landmarks.id = numbered.numbered_id;

UPDATE positions SET seq = numbered.n + (SELECT count(*) FROM landmarks)
FROM (SELECT user_id AS numbered_user, row_number() OVER (ORDER BY user_id) AS n FROM positions) AS numbered
WHERE positions.user_id = numbered.numbered_user;

CREATE INDEX landmarks_seq ON landmarks (seq);
CREATE INDEX positions_seq ON positions (seq);
