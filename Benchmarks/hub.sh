# The PostgreSQL hub cases of Benchmarks/run.sh (sourced by it: uses measure, row, $bin, $work, $data,
# $users, $runs, and sets $pgdir so run.sh's cleanup stops the server).
#
# For each user count U: push U positions into an empty hub and into a populated one (the second
# snapshot: half newer, a quarter older, a quarter equal), pull U positions into an empty edge, and a
# one-change round trip (edge A writes and syncs, edge B syncs and sees it). Each beside psql doing the
# same rows: `\copy` into a temporary staging table and one INSERT … ON CONFLICT … DO UPDATE … WHERE
# with the same last-writer-wins predicate (push); `\copy (SELECT …) TO` and sqlite3 loading it with the
# guarded upsert (pull); a one-row upsert and a select of the changes (round trip). The CSV files psql
# reads are written from the edges' databases beforehand, untimed.

pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
if [ -z "$pg_bin" ] || [ ! -x "$pg_bin/postgres" ]; then
    echo "hub cases skipped: no /usr/lib/postgresql/*/bin/postgres (apt-get install postgresql)" >&2
    return 0
fi

# initdb refuses root: run the server as postgres then.
as_postgres() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
pgdir=$(mktemp -d /tmp/catalog-bench-pg-XXXXXX)
[ "$(id -u)" -eq 0 ] && chown postgres "$pgdir"
as_postgres "$pg_bin/initdb" -D "$pgdir/data" -U postgres --auth=trust -E UTF8 --locale=C >/dev/null
pgport=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
as_postgres "$pg_bin/pg_ctl" -D "$pgdir/data" -l "$pgdir/server.log" -w \
    -o "-p $pgport -k $pgdir -c listen_addresses=127.0.0.1" start >/dev/null
export pgport PGOPTIONS="-c client_min_messages=warning"
psqlc() { psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$pgport" -U postgres "$@"; }
export -f psqlc
hub() { echo "postgresql://postgres@127.0.0.1:$pgport/$1"; }
# recreate NAME TEMPLATE: a fresh copy of a template database (untimed setup).
recreate="psqlc postgres -c 'DROP DATABASE IF EXISTS hubrun' -c 'CREATE DATABASE hubrun TEMPLATE"
lww="(excluded.updated_ms, excluded.counter, excluded.node) > (positions.updated_ms, positions.counter, positions.node)
   OR ((excluded.updated_ms, excluded.counter, excluded.node) = (positions.updated_ms, positions.counter, positions.node)
       AND (excluded.deleted, excluded.page, coalesce(excluded.landmark_id, -9223372036854775808))
           > (positions.deleted, positions.page, coalesce(positions.landmark_id, -9223372036854775808)))"

push_sql() {  # push_sql CSV: what a user would write with psql — one transaction, the same lock and rule
    cat <<SQL
BEGIN;
SELECT pg_advisory_xact_lock(1);
CREATE TEMPORARY TABLE staging (user_id text COLLATE "C", page bigint, landmark_id bigint, updated_ms bigint,
                                counter bigint, node text COLLATE "C", deleted boolean) ON COMMIT DROP;
\\copy staging FROM '$1' (FORMAT csv)
INSERT INTO positions (user_id, page, landmark_id, updated_ms, counter, node, deleted, seq)
SELECT user_id, page, landmark_id, updated_ms, counter, node, deleted, nextval('hub_change_seq') FROM staging
ON CONFLICT (user_id) DO UPDATE SET page = excluded.page, landmark_id = excluded.landmark_id, updated_ms = excluded.updated_ms,
    counter = excluded.counter, node = excluded.node, deleted = excluded.deleted, seq = excluded.seq
WHERE $lww;
COMMIT;
SQL
}

pull_sql() {  # pull_sql CSV DB: load what psql copied out into the edge with the guarded upsert
    cat <<SQL
PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;
CREATE TEMP TABLE staging (user_id TEXT, page INTEGER, landmark_id INTEGER, updated_ms INTEGER, counter INTEGER, node TEXT,
                           deleted INTEGER);
.import --csv $1 staging
BEGIN;
INSERT INTO positions (user_id, page, landmark_id, updated_ms, counter, node, deleted, seq)
SELECT user_id, page, nullif(landmark_id, ''), updated_ms, counter, node, deleted, rowid FROM staging WHERE true
ON CONFLICT (user_id) DO UPDATE SET page = excluded.page, landmark_id = excluded.landmark_id, updated_ms = excluded.updated_ms,
    counter = excluded.counter, node = excluded.node, deleted = excluded.deleted, seq = excluded.seq
WHERE $lww;
COMMIT;
SQL
}

# cursor DB HUB PULL PUSH: give DB a hub cursor (this hub's identity, pulled through PULL, pushed through
# PUSH), as an edge that has synced before has; so a push case pushes and pulls nothing else.
cursor() {
    local id
    id=$(psqlc -At "$2" -c "SELECT hub_id FROM hub_identity")
    sqlite3 "$1" "INSERT INTO sync_sources (source, kind, cursor) VALUES ('$(hub "$2")', 'hub',
        '{\"hub\":\"$id\",\"pullThrough\":\"$3\",\"pushThrough\":\"$4\"}')
        ON CONFLICT (source) DO UPDATE SET cursor = excluded.cursor"
}
export -f hub cursor

for u in "${users[@]}"; do
    first="$data/positions-$u.json"; second="$data/positions-$u-second.json"
    edge1="$work/hub-edge1.sqlite"; edge2="$work/hub-edge2.sqlite"
    rm -f "$edge1"* "$edge2"*
    "$bin" --db "$edge1" init --node n-edge-one >/dev/null && "$bin" --db "$edge1" sync --quiet "$first"
    "$bin" --db "$edge2" init --node n-edge-two >/dev/null && "$bin" --db "$edge2" sync --quiet "$second"
    for e in 1 2; do
        sqlite3 -csv "$work/hub-edge$e.sqlite" "SELECT user_id, page, landmark_id, updated_ms, counter, node, deleted FROM positions" \
            >"$work/hub-p$e.csv"
    done
    push_sql "$work/hub-p1.csv" >"$work/hub-push1.sql"; push_sql "$work/hub-p2.csv" >"$work/hub-push2.sql"
    # Templates: the hub's schema (made by catalog), and that hub holding edge one's rows (loaded by psql).
    psqlc postgres -c "DROP DATABASE IF EXISTS hubrun" -c "DROP DATABASE IF EXISTS tpl_empty" -c "DROP DATABASE IF EXISTS tpl_full" \
        -c "CREATE DATABASE tpl_empty"
    rm -f "$work/hub-schema.sqlite"*; "$bin" --db "$work/hub-schema.sqlite" sync --quiet "$(hub tpl_empty)"
    psqlc postgres -c "CREATE DATABASE tpl_full TEMPLATE tpl_empty"
    psqlc tpl_full -f "$work/hub-push1.sql" >/dev/null
    psqlc tpl_full -c "VACUUM ANALYZE"
    full_seq=$(psqlc -At tpl_full -c "SELECT last_value FROM hub_change_seq")
    run="$work/hub-run.sqlite"
    uri=$(hub hubrun)

    measure base "$recreate tpl_empty'" "psqlc hubrun -f $work/hub-push1.sql"
    base=$MEDIAN; row "hub push (empty hub)" "$u" "psql \\copy + upsert" "$MEDIAN" "$PEAK" "$u" ""
    measure ours "$recreate tpl_empty' && rm -f $run* && cp $edge1 $run" "$bin --db $run sync --quiet $uri"
    row "hub push (empty hub)" "$u" "catalog sync" "$MEDIAN" "$PEAK" "$u" "$base"
    [ "$(psqlc -At hubrun -c 'SELECT count(*) FROM positions')" = "$u" ] || { echo "push: wrong row count" >&2; exit 1; }

    measure base "$recreate tpl_full'" "psqlc hubrun -f $work/hub-push2.sql"
    base=$MEDIAN; row "hub push (populated hub)" "$u" "psql \\copy + upsert" "$MEDIAN" "$PEAK" "$u" ""
    measure ours "$recreate tpl_full' && rm -f $run* && cp $edge2 $run && cursor $run hubrun $full_seq 0" \
        "$bin --db $run sync --quiet $uri"
    row "hub push (populated hub)" "$u" "catalog sync" "$MEDIAN" "$PEAK" "$u" "$base"
    [ "$(psqlc -At hubrun -c 'SELECT count(*) FROM positions')" = "$u" ] || { echo "push: wrong row count" >&2; exit 1; }

    pull_sql "$work/hub-pulled.csv" >"$work/hub-pull.sql"
    copy_out="\\copy (SELECT user_id, page, landmark_id, updated_ms, counter, node, deleted::int FROM positions WHERE seq > 0) TO '$work/hub-pulled.csv' (FORMAT csv)"
    measure base "$recreate tpl_full' && rm -f $run* && $bin --db $run init" \
        "psqlc hubrun -c \"$copy_out\" && sqlite3 $run < $work/hub-pull.sql"
    base=$MEDIAN; row "hub pull" "$u" "psql \\copy + sqlite3" "$MEDIAN" "$PEAK" "$u" ""
    measure ours "$recreate tpl_full' && rm -f $run* && $bin --db $run init" "$bin --db $run sync --quiet $uri"
    row "hub pull" "$u" "catalog sync" "$MEDIAN" "$PEAK" "$u" "$base"
    [ "$(sqlite3 "$run" 'SELECT count(*) FROM positions')" = "$u" ] || { echo "pull: wrong row count" >&2; exit 1; }

    # Round trip on the populated hub: A and B hold its rows and have synced (cursors at its head).
    bash -c "$recreate tpl_full'"
    a="$work/hub-a.sqlite"; b="$work/hub-b.sqlite"
    rm -f "$a"* "$b"*; cp "$edge1" "$a"; cp "$edge1" "$b"
    "$bin" --db "$b" init --node n-edge-b >/dev/null 2>&1
    for e in "$a" "$b"; do
        "$bin" --db "$e" import Seeds/landmarkData.json >/dev/null
        cursor "$e" hubrun "$full_seq" "$(sqlite3 "$e" 'SELECT max(seq) FROM positions')"
        "$bin" --db "$e" sync --quiet "$uri"
    done
    "$bin" --db "$a" sync --quiet "$uri"
    cat >"$work/hub-roundtrip.sh" <<SH
page=\$(( RANDOM % 4 ))
"$bin" --db "$a" position set --user round-trip --page \$page
"$bin" --db "$a" sync --quiet "$uri"
"$bin" --db "$b" sync --quiet "$uri"
"$bin" --db "$b" position get --user round-trip | grep -q "page \$page of" || { echo "B does not see page \$page" >&2; exit 1; }
SH
    cat >"$work/hub-roundtrip-psql.sh" <<SH
through=\$(psqlc -At hubrun -c "SELECT last_value FROM hub_change_seq")
psqlc hubrun <<SQL
BEGIN;
SELECT pg_advisory_xact_lock(1);
INSERT INTO positions (user_id, page, landmark_id, updated_ms, counter, node, deleted, seq)
VALUES ('round-trip-psql', 1, NULL, (extract(epoch FROM clock_timestamp()) * 1000)::bigint, 0, 'n-psql', false, nextval('hub_change_seq'))
ON CONFLICT (user_id) DO UPDATE SET page = excluded.page, landmark_id = excluded.landmark_id, updated_ms = excluded.updated_ms,
    counter = excluded.counter, node = excluded.node, deleted = excluded.deleted, seq = excluded.seq
WHERE $lww;
COMMIT;
SQL
[ "\$(psqlc -At hubrun -c "SELECT count(*) FROM positions WHERE seq > \$through")" = 1 ]
SH
    measure base "true" "bash $work/hub-roundtrip-psql.sh"
    base=$MEDIAN; row "hub one-change round trip" "$u" "psql upsert + select" "$MEDIAN" "$PEAK" "1" ""
    measure ours "true" "bash $work/hub-roundtrip.sh"
    row "hub one-change round trip" "$u" "catalog (A writes+syncs, B syncs)" "$MEDIAN" "$PEAK" "1" "$base"
done
