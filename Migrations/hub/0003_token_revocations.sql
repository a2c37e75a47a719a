-- Bearer tokens revoked for every `serve --hub` of this hub (`catalog token revoke --hub`, docs/serve.md
-- §5); each serve reads the table every second. kind 'user': the tokens of user `subject` issued (iat)
-- before `before_s` (s since the epoch) and those without iat; kind 'jti': the token whose jti is
-- `subject`. A row stays until `catalog token revoke --lift --hub` removes it.
CREATE TABLE hub_token_revocations (
    kind       text NOT NULL CHECK (kind IN ('user', 'jti')),
    subject    text COLLATE "C" NOT NULL,
    before_s   bigint NOT NULL,
    revoked_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (kind, subject)
);
