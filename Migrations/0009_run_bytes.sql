-- The run ledger keeps the bytes a run fetched over all its sources (shown by `catalog log`, docs/operations.md §6);
-- runs recorded before this migration get the sum of their sources' rows.
ALTER TABLE sync_runs ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0;
UPDATE sync_runs SET bytes = (SELECT coalesce(sum(bytes), 0) FROM sync_run_sources WHERE run_id = sync_runs.id);
