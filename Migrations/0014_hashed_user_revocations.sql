-- A user's token revocation keeps the user only as the hash an erasure keeps (docs/serve.md §10,
-- docs/erasure.md §2): `subject` of kind 'user' becomes the SHA-256 of the NFC-normalised user id in
-- lowercase hex, so `token revoke --user` leaves no id in the file. The ids stored so far (NFC already, as
-- tokens' `sub` is read) are replaced by their hashes here; `catalog_user_hash` is the migrator's function.
-- Two rows cannot meet on one hash, since their ids differed. A subject that is a hash already (64 lowercase
-- hex digits, as serve reads it) is left as it is.
UPDATE token_revocations SET subject = catalog_user_hash(subject)
WHERE kind = 'user' AND NOT (length(subject) = 64 AND subject NOT GLOB '*[^0-9a-f]*');
