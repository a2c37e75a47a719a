-- A user's token revocation keeps the user only as the hash an erasure keeps (docs/serve.md §10,
-- docs/erasure.md §2): `subject` of kind 'user' becomes the SHA-256 of the NFC-normalised user id's UTF-8
-- bytes in lowercase hex, so the hub holds no id for it. The ids stored so far (NFC already) are replaced
-- by their hashes; a subject that is a hash already (64 lowercase hex digits) is left as it is, as a serve
-- of this version reads it (it hashes any other subject it reads: one an older binary wrote).
UPDATE hub_token_revocations SET subject = encode(sha256(convert_to(subject, 'UTF8')), 'hex')
WHERE kind = 'user' AND subject !~ '^[0-9a-f]{64}$';
