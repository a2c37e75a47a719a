-- The quarantine keeps, of the rows delivered for one key and one stamp, the one the tie rule prefers
-- (docs/merge-rules.md §3, §6), as the hub's quarantine does: each row's tombstone flag and its content
-- in the rule's byte order (a landmark's canonical content JSON; a position's page and landmark as
-- order-preserving big-endian numbers). Rows kept before this migration count as live with empty content,
-- so any later delivery of their key and stamp with content replaces them (merging makes that safe).
ALTER TABLE sync_quarantine ADD COLUMN deleted INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sync_quarantine ADD COLUMN tie_content BLOB NOT NULL DEFAULT x'';
