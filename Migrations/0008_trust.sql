-- Trust (SPEC §15, docs/trust.md): per saved remote, the minisign public keys its snapshot log must be
-- signed by (one base64 line each, newline-separated; empty: no signature required) and the kinds of
-- rows it may write (all | landmarks | positions). Rows outside a source's grant are counted per run.
ALTER TABLE sync_remotes ADD COLUMN trusted_keys TEXT NOT NULL DEFAULT '';
ALTER TABLE sync_remotes ADD COLUMN allow TEXT NOT NULL DEFAULT 'all' CHECK (allow IN ('all', 'landmarks', 'positions'));
ALTER TABLE sync_runs ADD COLUMN not_allowed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sync_run_sources ADD COLUMN not_allowed INTEGER NOT NULL DEFAULT 0;
