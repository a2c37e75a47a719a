-- Bearer tokens revoked with `catalog token revoke` (docs/serve.md §10): a running serve refuses them.
-- kind 'user': every token of user `subject` issued (iat) before `before_s` (s since the epoch), and every
-- token of that user without iat; kind 'jti': the token whose jti is `subject` (`before_s` unused, 0).
-- source 'database': recorded here (`token revoke`, a row stays until `--lift` removes it); 'hub': the copy
-- a `serve --hub` keeps of its hub's revocations, replaced whenever it reads them, so a serve restarted
-- while the hub is down still refuses them.
CREATE TABLE token_revocations (
    source     TEXT NOT NULL CHECK (source IN ('database', 'hub')),
    kind       TEXT NOT NULL CHECK (kind IN ('user', 'jti')),
    subject    TEXT NOT NULL,
    before_s   INTEGER NOT NULL,
    revoked_at TEXT NOT NULL,
    PRIMARY KEY (source, kind, subject)
) WITHOUT ROWID;
