-- A remote that is a `catalog serve` (catalog+https://HOST/v1) keeps the path of the file holding its bearer
-- token (`catalog remote add NAME URL --token-file FILE`, docs/protocol.md §9); the token itself is never
-- stored in the database. '' for every other remote.
ALTER TABLE sync_remotes ADD COLUMN token_file TEXT NOT NULL DEFAULT '';
