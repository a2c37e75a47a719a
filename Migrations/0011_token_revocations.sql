-- Bearer tokens revoked with `catalog token revoke` (docs/serve.md §10): a running serve refuses them.
-- kind 'user': every token of user `subject` issued (iat) before `before_s` (s since the epoch), and every
-- token of that user without iat; kind 'jti': the token whose jti is `subject` (`before_s` unused, 0).
-- A row stays until `catalog token revoke --lift` removes it.
CREATE TABLE token_revocations (
    kind       TEXT NOT NULL CHECK (kind IN ('user', 'jti')),
    subject    TEXT NOT NULL,
    before_s   INTEGER NOT NULL,
    revoked_at TEXT NOT NULL,
    PRIMARY KEY (kind, subject)
) WITHOUT ROWID;
