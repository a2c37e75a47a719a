#!/usr/bin/env bash
# LandmarkCatalog benchmarks: each case against the sqlite3 CLI doing the same job, measured in the same
# invocation, reported as medians, rows/s, peak RSS and ratios.
#
#   Benchmarks/run.sh            full run: 10k / 100k / 1M landmarks (the 1M file is ~0.9 GB), 10k / 1M users
#   Benchmarks/run.sh --quick    10k / 100k landmarks, 10k users (about a minute; CI runs it)
#   Benchmarks/run.sh --hub      only the PostgreSQL hub cases (with --quick: at 10k users)
#   Benchmarks/run.sh --log      only the snapshot-log cases, signing (--sign) and verifying (--trust) included
#                                (with --quick: at 10k landmarks + 10k users)
#   Benchmarks/run.sh --observe  only the Swift library: another process's commit → `catalog watch` prints
#                                (p50, p95 over 200 commits), one idle observer's CPU over 60 s (--quick:
#                                10 s), 100 observers in one process, featured() from 8 tasks against the
#                                CLI per process; see Benchmarks/observe.py and Benchmarks/AppBench
#   Benchmarks/run.sh --follow   only live sync (sync --follow): three nodes, A writes 200 positions at 5/s
#                                with `position set`; B follows A's log through real nginx, C a PostgreSQL
#                                hub A also follows; write-to-visible p50/p95/max on B and C, an idle HTTP
#                                follower's CPU and RSS over 5 minutes (--quick: 30 s) and its requests per
#                                minute; see Benchmarks/follow.py. Results: Benchmarks/results/follow.md
#   Benchmarks/run.sh --serve    only `catalog serve` (wrk, Python http.client, real nginx): a fresh device's
#                                bootstrap of one user among 1M (--quick: 10k) against syncing the published log,
#                                authenticated "nothing new" polls (landmarks with If-None-Match: 304, with and
#                                without a cursor; positions) against nginx's static 304 (requests/s, 3 rounds),
#                                a POST's p50/p95, POST → another client's long-poll p50/p95, 10,000 idle
#                                long-polls' RSS and CPU (--quick: 2,000); see Benchmarks/serve.py. Then two
#                                devices' CarouselModels through one serve (swipe → other device, p50/p95 over 50)
#                                and, idle 60 s (--quick: 20), the requests a minute, CPU and voluntary context
#                                switches of a process holding sessions and live CarouselModels, then a session
#                                against a server that never answers (60 s; --quick: 10); see Benchmarks/DeviceBench.
#                                Then two `serve --hub` on a throwaway PostgreSQL: POST → long-poll across them
#                                (p50/p95 over 100) beside one server; see Benchmarks/serve_hub.py.
#                                Results: Benchmarks/results/serve.md
#   Benchmarks/run.sh --serve --nothing-new   only the "nothing new" polls (landmarks with If-None-Match, with
#                                and without a cursor; positions) against nginx's static 304, interleaved
#                                over 5 rounds; Benchmarks/results/serve-nothing-new.md
#   Benchmarks/run.sh --gc       only collection (docs/erasure.md §4; Benchmarks/gc.sh with the release build):
#                                1M positions (--quick: 100k) set, cleared, then `gc --horizon 0s`; the file's
#                                size after gc beside one that never held them (bound 1.05x), gc's time beside
#                                the sync of the same rows (bound 2x). Results: Benchmarks/results/gc.md
#   Benchmarks/run.sh --repair   only `catalog repair` at 1M positions (--quick: 10k) against a full sync of the
#                                same difference (0, 1, 100, 1,000 differing rows): round trips, bytes per
#                                differing row, time; see Benchmarks/repair.py. Results: Benchmarks/results/repair.md
#   Benchmarks/run.sh --restore  only a serve restored from a backup at 1M positions (--quick: 10k): `sync --repair`
#                                against the full re-read of the same restore (1, 100, 1,000 rows the restored
#                                serve lacks); see Benchmarks/restore.py. Results: Benchmarks/results/restore.md
#   Benchmarks/run.sh --log-size=N   only the snapshot-log cases, at N landmarks + N users (N >= 10000)
#   Benchmarks/run.sh ... --plot     then draw docs/cost.svg (Benchmarks/plot.sh: gnuplot, installed from
#                                    Debian when missing; skipped with a note when it cannot be)
#
# The hub cases (push into an empty and into a populated hub, pull, a one-change round trip, each beside
# psql doing the same rows) run against a throwaway PostgreSQL server the script starts itself: initdb
# as the postgres user into a temporary directory, 127.0.0.1 and a random port, stopped at the end.
#
# Data is generated once, deterministically (seeded), into Benchmarks/data/ (git-ignored).
# Results: a table on stdout and Benchmarks/results/latest.md (a --log-size run also in
# Benchmarks/results/log-N.md, so runs at several sizes can be plotted together).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

quick=false
hub_only=false
log_only=false
observe_only=false
repair_only=false
restore_only=false
follow_only=false
serve_only=false
gc_only=false
nothing_new=false
log_size=""
plot=false
for argument in "$@"; do
    case $argument in
        --quick) quick=true ;;
        --hub) hub_only=true ;;
        --log) log_only=true ;;
        --observe) observe_only=true ;;
        --follow) follow_only=true ;;
        --serve) serve_only=true ;;
        --gc) gc_only=true ;;
        --repair) repair_only=true ;;
        --restore) restore_only=true ;;
        --nothing-new) nothing_new=true ;;
        --log-size=[0-9]*) log_only=true; log_size=${argument#--log-size=} ;;
        --plot) plot=true ;;
        *) echo "usage: Benchmarks/run.sh [--quick] [--hub | --log | --log-size=N | --observe | --follow | --serve [--nothing-new] | --gc | --repair | --restore] [--plot]" >&2; exit 64 ;;
    esac
done
if [ -n "$log_size" ] && [ "$log_size" -lt 10000 ]; then
    echo "Benchmarks/run.sh: --log-size must be at least 10000 (the 10,000-change case needs that many users)" >&2; exit 64
fi

# What the benchmark needs from Debian.
need=()
command -v sqlite3 >/dev/null || need+=(sqlite3)
[ -x /usr/bin/time ] || need+=(time)
command -v psql >/dev/null || need+=(postgresql-client)
if $serve_only; then
    command -v wrk >/dev/null || need+=(wrk)
    command -v nginx >/dev/null || need+=(nginx-light)
    command -v openssl >/dev/null || need+=(openssl)
fi
if [ ${#need[@]} -gt 0 ]; then
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq && $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi
# gnuplot only draws the picture: when it cannot be installed, the benchmark still runs.
if $plot && ! command -v gnuplot >/dev/null; then
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq gnuplot-nox >/dev/null 2>&1 \
        || echo "Benchmarks/run.sh: could not install gnuplot-nox; the picture will not be drawn" >&2
fi
./scripts/setup

# The products alone: the test support target is built for testing only (@testable), never in release.
for product in catalog catalog-app-bench catalog-device-bench; do swift build -c release --product "$product" >&2; done
bin=$(swift build -c release --show-bin-path)/catalog
if $observe_only; then
    mkdir -p Benchmarks/results
    idle=60; $quick && idle=10
    python3 Benchmarks/observe.py "$bin" Seeds/landmarkData.json --commits 200 --idle "$idle" | tee Benchmarks/results/observe.md
    # 100 observers in one process, and featured() from 8 tasks against the CLI (Benchmarks/AppBench).
    "$(dirname "$bin")/catalog-app-bench" "$bin" Seeds/landmarkData.json --observers 100 --commits 50 --seconds "$idle" \
        | tail -n +3 | tee -a Benchmarks/results/observe.md
    exit 0
fi
if $gc_only; then
    mkdir -p Benchmarks/results
    positions=1000000; $quick && positions=100000
    { echo "Benchmarks/run.sh --gc — $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, release build"; echo
      CATALOG="$bin" Benchmarks/gc.sh "$positions" | sed 's/^/    /'; } | tee Benchmarks/results/gc.md
    exit 0
fi
data=Benchmarks/data
work=$(mktemp -d)
pgdir=""
cleanup() {
    if [ -n "$pgdir" ]; then as_postgres "$pg_bin/pg_ctl" -D "$pgdir/data" -m fast -w stop >/dev/null 2>&1 || true; rm -rf "$pgdir"; fi
    rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$data" Benchmarks/results

# start_hub NAME: a throwaway PostgreSQL server (stopped by cleanup through $pgdir) and a database NAME on it;
# sets HUB_URI, or leaves it empty (with a notice) when there is no server binary.
HUB_URI=""
pg_opts=""
start_hub() {
    pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
    if [ -z "$pg_bin" ] || [ ! -x "$pg_bin/postgres" ]; then
        echo "the hub path is skipped: no /usr/lib/postgresql/*/bin/postgres (apt-get install postgresql)" >&2
        return 0
    fi
    as_postgres() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
    pgdir=$(mktemp -d /tmp/catalog-bench-pg-XXXXXX)
    [ "$(id -u)" -eq 0 ] && chown postgres "$pgdir"
    as_postgres "$pg_bin/initdb" -D "$pgdir/data" -U postgres --auth=trust -E UTF8 --locale=C >/dev/null
    pgport=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    as_postgres "$pg_bin/pg_ctl" -D "$pgdir/data" -l "$pgdir/server.log" -w \
        -o "-p $pgport -k $pgdir -c listen_addresses=127.0.0.1 $pg_opts" start >/dev/null
    psql -X -q -h 127.0.0.1 -p "$pgport" -U postgres -c "CREATE DATABASE $1" postgres
    HUB_URI="postgresql://postgres@127.0.0.1:$pgport/$1"
}


if $repair_only; then
    users_n=1000000; $quick && users_n=10000
    [ -s "$data/positions-$users_n.json" ] || python3 Benchmarks/generate.py positions "$users_n" "$data/positions-$users_n.json" >&2
    # The hub cases count PostgreSQL's statements per repair with pg_stat_statements.
    pg_opts="-c shared_preload_libraries=pg_stat_statements"
    start_hub catalog_bench_repair
    python3 Benchmarks/repair.py "$bin" "$data/positions-$users_n.json" ${HUB_URI:+--hub "$HUB_URI"} | tee Benchmarks/results/repair.md
    exit 0
fi

if $restore_only; then
    users_n=1000000; $quick && users_n=10000
    [ -s "$data/positions-$users_n.json" ] || python3 Benchmarks/generate.py positions "$users_n" "$data/positions-$users_n.json" >&2
    python3 Benchmarks/restore.py "$bin" "$data/positions-$users_n.json" | tee Benchmarks/results/restore.md
    exit 0
fi

if $serve_only; then
    users_n=1000000; polls=10000; hold=30; device_idle=60; device_hang=60
    if $quick; then users_n=10000; polls=2000; hold=5; device_idle=20; device_hang=10; fi
    [ -s "$data/positions-$users_n.json" ] || python3 Benchmarks/generate.py positions "$users_n" "$data/positions-$users_n.json" >&2
    if $nothing_new; then
        python3 Benchmarks/serve.py "$bin" Seeds/landmarkData.json "$data/positions-$users_n.json" --nothing-new --rounds 5 \
            | tee Benchmarks/results/serve-nothing-new.md
        exit 0
    fi
    python3 Benchmarks/serve.py "$bin" Seeds/landmarkData.json "$data/positions-$users_n.json" --polls "$polls" --seconds "$hold" \
        | tee Benchmarks/results/serve.md
    # The app's own sync: two devices' CarouselModels through one serve, and an idle session (Benchmarks/DeviceBench).
    "$(dirname "$bin")/catalog-device-bench" "$bin" Seeds/landmarkData.json --swipes 50 --idle "$device_idle" --hang "$device_hang" \
        | tail -n +3 | tee -a Benchmarks/results/serve.md
    # Two serve processes on one PostgreSQL hub: write-to-visible across them (Benchmarks/serve_hub.py).
    start_hub servehub
    if [ -n "$HUB_URI" ]; then
        python3 Benchmarks/serve_hub.py "$bin" Seeds/landmarkData.json "$HUB_URI" --round-trips 100 | tee -a Benchmarks/results/serve.md
    fi
    exit 0
fi

if $follow_only; then
    idle=300; $quick && idle=30
    hub_args=()
    start_hub followhub
    [ -n "$HUB_URI" ] && hub_args=(--hub "$HUB_URI")
    python3 Benchmarks/follow.py "$bin" Seeds/landmarkData.json "${hub_args[@]}" --writes 200 --rate 5 --idle "$idle" \
        | tee Benchmarks/results/follow.md
    exit 0
fi

if $quick; then
    sizes=(10000 100000); users=(10000); runs=3
else
    sizes=(10000 100000 1000000); users=(10000 1000000); runs=3
fi
# --log-size: only the snapshot-log cases' own data is generated (below).
if [ -n "$log_size" ]; then sizes=(); users=(); fi

gen() {  # gen FILE ARGS...: generate once
    local file=$1; shift
    [ -s "$file" ] || python3 Benchmarks/generate.py "$@" >&2
}
core_sizes=("${sizes[@]}")
if $hub_only || $log_only; then core_sizes=(); fi
for n in "${sizes[@]}"; do
    parts=$(( n >= 1000000 ? 4 : 1 ))
    if [ "$parts" -gt 1 ]; then gen "$data/landmarks-$n.part0.json" landmarks "$n" "$data/landmarks-$n.json" --parts "$parts"
    else gen "$data/landmarks-$n.json" landmarks "$n" "$data/landmarks-$n.json"; fi
done
for u in "${users[@]}"; do
    gen "$data/positions-$u.json" positions "$u" "$data/positions-$u.json"
    gen "$data/positions-$u-second.json" positions "$u" "$data/positions-$u-second.json" --overlap
done

# measure NAME SETUP CMD: runs SETUP (untimed) then CMD under GNU time, $runs times.
# Sets MEDIAN (seconds) and PEAK (MB, the largest max RSS seen).
measure() {
    local setup=$2 cmd=$3 times=() peak=0
    for _ in $(seq "$runs"); do
        bash -c "$setup" >/dev/null 2>&1
        /usr/bin/time -f "%e %M" -o "$work/time" bash -c "$cmd" >/dev/null 2>"$work/err" || { echo "FAILED: $cmd" >&2; cat "$work/err" >&2; exit 1; }
        read -r t rss <"$work/time"
        times+=("$t")
        [ "$rss" -gt "$peak" ] && peak=$rss
    done
    MEDIAN=$(printf '%s\n' "${times[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    PEAK=$(( peak / 1024 ))
}

# measure_pair SETUP_A CMD_A SETUP_B CMD_B: runs A and B alternately, $runs times each, so both see the
# same machine (page cache, other load, clock speed). Sets MEDIAN_A PEAK_A MEDIAN_B PEAK_B.
measure_pair() {
    local a=() b=() pa=0 pb=0 t rss
    for _ in $(seq "$runs"); do
        bash -c "$1" >/dev/null 2>&1
        /usr/bin/time -f "%e %M" -o "$work/time" bash -c "$2" >/dev/null 2>"$work/err" || { echo "FAILED: $2" >&2; cat "$work/err" >&2; exit 1; }
        read -r t rss <"$work/time"; a+=("$t"); [ "$rss" -gt "$pa" ] && pa=$rss
        bash -c "$3" >/dev/null 2>&1
        /usr/bin/time -f "%e %M" -o "$work/time" bash -c "$4" >/dev/null 2>"$work/err" || { echo "FAILED: $4" >&2; cat "$work/err" >&2; exit 1; }
        read -r t rss <"$work/time"; b+=("$t"); [ "$rss" -gt "$pb" ] && pb=$rss
    done
    MEDIAN_A=$(printf '%s\n' "${a[@]}" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'); PEAK_A=$(( pa / 1024 ))
    MEDIAN_B=$(printf '%s\n' "${b[@]}" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'); PEAK_B=$(( pb / 1024 ))
}

# Memory budgets: a merge of 1M positions peaks at 100 MB at most (docs/performance.md §2). A peak over its
# budget is listed at the end and the run exits 1.
over_budget=()
budget() {  # budget CASE PEAK_MB LIMIT_MB
    if [ "$2" -gt "$3" ]; then over_budget+=("$1: peak RSS $2 MB, over the $3 MB budget"); fi
}

rows=()
row() {  # row CASE SIZE TOOL SECONDS RSS_MB COUNT BASELINE_SECONDS
    local rate ratio
    rate=$(awk -v n="$6" -v t="$4" 'BEGIN { printf "%.0f", (t > 0 ? n / t : 0) }')
    ratio=$(awk -v b="$7" -v t="$4" 'BEGIN { if (b == "" || t == 0) print "-"; else printf "%.2fx", b / t }')
    rows+=("| $1 | $2 | $3 | $4 | $rate | $5 | $ratio |")
    printf '%-28s %-9s %-22s %8ss %12s rows/s %6s MB  %s\n' "$1" "$2" "$3" "$4" "$rate" "$5" "$ratio" >&2
}

node="n-bench"
landmark_sql() {  # the baseline a user would write: INSERT … SELECT … FROM json_each(readfile(…))
    local f
    echo "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; BEGIN;"
    for f in "$@"; do
        cat <<SQL
INSERT INTO landmarks (id, name, category, city, state, park, description, image_name, is_featured, is_favorite,
                       latitude, longitude, extra, updated_ms, counter, node, deleted)
SELECT json_extract(value, '\$.id'), json_extract(value, '\$.name'), json_extract(value, '\$.category'),
       json_extract(value, '\$.city'), json_extract(value, '\$.state'), json_extract(value, '\$.park'),
       json_extract(value, '\$.description'), json_extract(value, '\$.imageName'),
       coalesce(json_extract(value, '\$.isFeatured'), 0), coalesce(json_extract(value, '\$.isFavorite'), 0),
       json_extract(value, '\$.coordinates.latitude'), json_extract(value, '\$.coordinates.longitude'),
       NULL, 1795996800000, 0, '$node', 0
FROM json_each(readfile('$repo/$f'));
SQL
    done
    echo "COMMIT;"
}

position_sql() {  # a guarded last-writer-wins upsert from json_each
    cat <<SQL
PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; BEGIN;
INSERT INTO positions (user_id, page, landmark_id, updated_ms, counter, node, deleted)
SELECT json_extract(value, '\$.user'), json_extract(value, '\$.page'), json_extract(value, '\$.landmarkId'),
       CAST(round((julianday(json_extract(value, '\$.updatedAt')) - 2440587.5) * 86400000) AS INTEGER),
       json_extract(value, '\$.counter'), json_extract(value, '\$.node'), json_extract(value, '\$.deleted')
FROM json_each(readfile('$repo/$1'), '\$.positions') WHERE true
ON CONFLICT (user_id) DO UPDATE SET page = excluded.page, landmark_id = excluded.landmark_id,
    updated_ms = excluded.updated_ms, counter = excluded.counter, node = excluded.node, deleted = excluded.deleted
WHERE (excluded.updated_ms, excluded.counter, excluded.node) > (positions.updated_ms, positions.counter, positions.node);
COMMIT;
SQL
}

echo "case                         size      tool                     median      rows/s            peak   vs baseline" >&2
for n in "${core_sizes[@]}"; do
    file="$data/landmarks-$n.json"
    if [ "$n" -ge 1000000 ]; then parts=("$data"/landmarks-"$n".part*.json); else parts=("$file"); fi
    db="$work/import.sqlite"
    landmark_sql "${parts[@]}" >"$work/baseline.sql"
    measure base "rm -f $db*; $bin --db $db init" "sqlite3 $db < $work/baseline.sql"
    base=$MEDIAN; row "import (fresh)" "$n" "sqlite3 json_each" "$MEDIAN" "$PEAK" "$n" ""
    measure ours "rm -f $db*; $bin --db $db init" "$bin --db $db import $file"
    first=$MEDIAN; row "import (fresh)" "$n" "catalog import" "$MEDIAN" "$PEAK" "$n" "$base"
    # Re-import of the unchanged file: compared with the first import; the WAL must not grow.
    wal_before=$(stat -c %s "$db-wal" 2>/dev/null || echo 0)
    sqlite3 "$db" "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null
    measure ours "true" "$bin --db $db import $file"
    wal_after=$(stat -c %s "$db-wal" 2>/dev/null || echo 0)
    row "re-import (unchanged)" "$n" "catalog (baseline: 1st import)" "$MEDIAN" "$PEAK" "$n" "$first"
    echo "  re-import: WAL bytes written after checkpoint: $wal_after (0 = no page rewritten)" >&2
    rows+=("| re-import WAL bytes written | $n | catalog import | $wal_after bytes | | | |")
    # featured --json on this database.
    featured=$(sqlite3 "$db" "SELECT count(*) FROM landmarks WHERE is_featured = 1 AND deleted = 0")
    measure base "true" "sqlite3 -json $db \"SELECT id, name, category, city, state, park, description, image_name AS imageName, is_featured AS isFeatured, is_favorite AS isFavorite, json_object('latitude', latitude, 'longitude', longitude) AS coordinates FROM landmarks WHERE is_featured = 1 AND deleted = 0 ORDER BY id\" > /dev/null"
    base=$MEDIAN; row "featured --json" "$n" "sqlite3 -json" "$MEDIAN" "$PEAK" "$featured" ""
    measure ours "true" "$bin --db $db featured --json > /dev/null"
    row "featured --json" "$n" "catalog featured" "$MEDIAN" "$PEAK" "$featured" "$base"
done

for u in "${users[@]}"; do
    { $hub_only || $log_only; } && break
    first="$data/positions-$u.json"; second="$data/positions-$u-second.json"
    db="$work/sync.sqlite"
    position_sql "$first" >"$work/p1.sql"; position_sql "$second" >"$work/p2.sql"
    measure base "rm -f $db*; $bin --db $db init" "sqlite3 $db < $work/p1.sql"
    base=$MEDIAN; row "sync positions (empty db)" "$u" "sqlite3 upsert" "$MEDIAN" "$PEAK" "$u" ""
    measure ours "rm -f $db*; $bin --db $db init" "$bin --db $db sync --quiet $first"
    row "sync positions (empty db)" "$u" "catalog sync" "$MEDIAN" "$PEAK" "$u" "$base"
    if [ "$u" -ge 1000000 ]; then budget "sync positions (empty db) $u" "$PEAK" 100; fi
    measure base "rm -f $db*; $bin --db $db init; sqlite3 $db < $work/p1.sql" "sqlite3 $db < $work/p2.sql"
    base=$MEDIAN; row "sync positions (populated)" "$u" "sqlite3 upsert" "$MEDIAN" "$PEAK" "$u" ""
    measure ours "rm -f $db*; $bin --db $db init; $bin --db $db sync --quiet $first" "$bin --db $db sync --quiet $second"
    row "sync positions (populated)" "$u" "catalog sync" "$MEDIAN" "$PEAK" "$u" "$base"
    if [ "$u" -ge 1000000 ]; then budget "sync positions (populated) $u" "$PEAK" 100; fi
done

# Incremental sync (snapshot logs): the cost of one change and of 10,000, against a full export and a
# full-snapshot sync measured here; bootstrap from a base against an import of the same rows.
if ! $hub_only; then
if [ -n "$log_size" ]; then ln=$log_size; pn=$log_size; elif $quick; then ln=10000; pn=10000; else ln=1000000; pn=1000000; fi
lfile="$data/landmarks-$ln.json"; pfile="$data/positions-$pn.json"
if [ "$ln" -lt 1000000 ]; then gen "$lfile" landmarks "$ln" "$lfile"; fi
gen "$pfile" positions "$pn" "$pfile"
pub="$work/pub.sqlite"; con="$work/con.sqlite"; log="$work/log"
rm -rf "$pub"* "$con"* "$log"
"$bin" --db "$pub" import --quiet "$lfile"
"$bin" --db "$pub" sync --quiet "$pfile"
"$bin" --db "$pub" publish --quiet "$log"
"$bin" --db "$con" sync --quiet "$log"
rows_total=$((ln + pn))
echo "  log: $ln landmarks + $pn positions published; consumer bootstrapped" >&2
measure base "true" "$bin --db $pub export --output $work/full.json"
full_export=$MEDIAN; row "export (full snapshot)" "$rows_total" "catalog export" "$MEDIAN" "$PEAK" "$rows_total" ""
full_bytes=$(stat -c %s "$work/full.json")
rows+=("| full snapshot bytes fetched | $rows_total | catalog sync | $full_bytes bytes | | | |")
for changes in 1 10000; do
    if [ "$changes" -eq 1 ]; then
        make_change="$bin --db $pub position set --user bench-one-\$RANDOM --page 0"
    else
        make_change="python3 $repo/Benchmarks/generate.py changes 10000 $work/changes.json $pn \$RANDOM >/dev/null 2>&1 && $bin --db $pub sync --quiet $work/changes.json"
    fi
    # The consumer is up to date on the log before each case.
    "$bin" --db "$pub" publish --quiet "$log"; "$bin" --db "$con" sync --quiet "$log"
    measure ours "$make_change" "$bin --db $pub publish --quiet $log"
    row "publish after $changes change(s)" "$rows_total" "catalog publish (baseline: export)" "$MEDIAN" "$PEAK" "$changes" "$full_export"
    measure ours "$make_change && $bin --db $pub publish --quiet $log" "$bin --db $con sync --quiet $log"
    ours_sync=$MEDIAN; ours_peak=$PEAK
    bash -c "$make_change" >/dev/null 2>&1; "$bin" --db "$pub" publish --quiet "$log"
    fetched=$("$bin" --db "$con" sync --json "$log" | python3 -c 'import json,sys; print(sum(s["bytes"] for s in json.load(sys.stdin)["sources"]))')
    # Today's way to deliver the same change: a full snapshot holding it, merged whole.
    measure base "$make_change && $bin --db $pub export --output $work/full.json" "$bin --db $con sync --quiet $work/full.json"
    full_sync=$MEDIAN; row "sync full snapshot ($changes change(s))" "$rows_total" "catalog sync" "$MEDIAN" "$PEAK" "$rows_total" ""
    row "consumer sync after $changes change(s)" "$rows_total" "catalog sync (baseline: full sync)" "$ours_sync" "$ours_peak" "$changes" "$full_sync"
    echo "  after $changes change(s): a consumer fetched $fetched bytes (a full snapshot is $full_bytes)" >&2
    rows+=("| bytes fetched after $changes change(s) | $rows_total | catalog sync | $fetched bytes | | | |")
done
# Signing and verifying (docs/trust.md): the same publish and sync, signed (--sign) and trusted (--trust),
# against unsigned ones, runs alternating; each side's setup publishes (and syncs) the other log untimed, so
# both carry the same changes. Wall time from $EPOCHREALTIME (µs): what signing adds is a few ms at most
# (target: <= 5 ms per publish and per sync), below /usr/bin/time's 10 ms.
fine_pair() {  # fine_pair SETUP_A CMD_A SETUP_B CMD_B: sets FINE_A FINE_B (median ms)
    local a=() b=() t0
    # A few ms against tens: more runs than the other cases (at least 11), medians of the alternating pairs.
    for _ in $(seq $(( runs > 11 ? runs : 11 ))); do
        bash -c "$1" >/dev/null 2>&1; t0=$EPOCHREALTIME; bash -c "$2" >/dev/null 2>&1 || { echo "FAILED: $2" >&2; exit 1; }
        a+=("$(awk -v s="$t0" -v e="$EPOCHREALTIME" 'BEGIN { printf "%.2f", (e - s) * 1000 }')")
        bash -c "$3" >/dev/null 2>&1; t0=$EPOCHREALTIME; bash -c "$4" >/dev/null 2>&1 || { echo "FAILED: $4" >&2; exit 1; }
        b+=("$(awk -v s="$t0" -v e="$EPOCHREALTIME" 'BEGIN { printf "%.2f", (e - s) * 1000 }')")
    done
    FINE_A=$(printf '%s\n' "${a[@]}" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
    FINE_B=$(printf '%s\n' "${b[@]}" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
}
key="$work/bench.key"; slog="$work/slog"; scon="$work/scon.sqlite"
rm -rf "$key" "$key.pub" "$slog" "$scon"*
"$bin" key generate --output "$key" >/dev/null
"$bin" --db "$pub" publish --quiet "$log"; "$bin" --db "$con" sync --quiet "$log"
"$bin" --db "$pub" publish --quiet --sign "$key" "$slog"; "$bin" --db "$scon" sync --quiet --trust "$key.pub" "$slog"
for changes in 1 10000; do
    if [ "$changes" -eq 1 ]; then
        make_change="$bin --db $pub position set --user bench-sign-\$RANDOM --page 0"
    else
        make_change="python3 $repo/Benchmarks/generate.py changes 10000 $work/changes.json $pn \$RANDOM >/dev/null 2>&1 && $bin --db $pub sync --quiet $work/changes.json"
    fi
    publish_plain="$bin --db $pub publish --quiet $log"; publish_signed="$bin --db $pub publish --quiet --sign $key $slog"
    fine_pair "$make_change && $publish_signed" "$publish_plain" "$make_change && $publish_plain" "$publish_signed"
    added=$(awk -v a="$FINE_A" -v b="$FINE_B" 'BEGIN { printf "%.2f", b - a }')
    echo "  publish after $changes change(s): unsigned $FINE_A ms, signed $FINE_B ms (signing adds $added ms)" >&2
    rows+=("| publish --sign after $changes change(s) | $rows_total | catalog publish (baseline: unsigned) | $FINE_B ms | | | $(awk -v a="$FINE_A" -v b="$FINE_B" 'BEGIN { printf "%.2fx", a / b }') (+$added ms) |")
    sync_plain="$bin --db $con sync --quiet $log"; sync_trusted="$bin --db $scon sync --quiet --trust $key.pub $slog"
    fine_pair "$make_change && $publish_plain && $publish_signed && $sync_trusted" "$sync_plain" \
              "$make_change && $publish_plain && $publish_signed && $sync_plain" "$sync_trusted"
    added=$(awk -v a="$FINE_A" -v b="$FINE_B" 'BEGIN { printf "%.2f", b - a }')
    echo "  consumer sync after $changes change(s): unsigned $FINE_A ms, verified $FINE_B ms (verifying adds $added ms)" >&2
    rows+=("| sync --trust after $changes change(s) | $rows_total | catalog sync (baseline: unsigned) | $FINE_B ms | | | $(awk -v a="$FINE_A" -v b="$FINE_B" 'BEGIN { printf "%.2fx", a / b }') (+$added ms) |")
done
"$bin" --db "$pub" publish --quiet --sign "$key" "$slog"; "$bin" --db "$scon" sync --quiet --trust "$key.pub" "$slog"
rm -rf "$key" "$key.pub" "$slog" "$scon"*
"$bin" --db "$pub" publish --quiet "$log"; "$bin" --db "$con" sync --quiet "$log"
digest_pub=$("$bin" --db "$pub" status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["digest"])')
digest_con=$("$bin" --db "$con" status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["digest"])')
[ "$digest_pub" = "$digest_con" ] || { echo "FAILED: publisher and consumer digests differ ($digest_pub / $digest_con)" >&2; exit 1; }
# Bootstrap: a base of landmarks only, into an empty database, against importing the same file.
lpub="$work/lpub.sqlite"; llog="$work/llog"; rm -rf "$lpub"* "$llog"
"$bin" --db "$lpub" import --quiet "$lfile"; "$bin" --db "$lpub" publish --quiet "$llog"
# Runs alternate (import, bootstrap, import, …): run to run the 1M import varies by up to 25% here.
measure_pair "rm -f $work/boot.sqlite*; $bin --db $work/boot.sqlite init" "$bin --db $work/boot.sqlite import --quiet $lfile" \
             "rm -f $work/boot.sqlite*; $bin --db $work/boot.sqlite init" "$bin --db $work/boot.sqlite sync --quiet $llog"
row "import (for bootstrap)" "$ln" "catalog import" "$MEDIAN_A" "$PEAK_A" "$ln" ""
row "bootstrap from a base" "$ln" "catalog sync (baseline: import)" "$MEDIAN_B" "$PEAK_B" "$ln" "$MEDIAN_A"
rm -rf "$pub"* "$con"* "$log" "$lpub"* "$llog" "$work"/boot.sqlite* "$work/full.json"
fi
$log_only || source Benchmarks/hub.sh

{
    echo "Benchmarks/run.sh $* — $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, $runs runs per case (median), sqlite3 $(sqlite3 --version | cut -d' ' -f1)"
    echo
    echo "| case | size | tool | median s | rows/s | peak RSS MB | speed-up vs baseline |"
    echo "| --- | --- | --- | --- | --- | --- | --- |"
    printf '%s\n' "${rows[@]}"
} | tee Benchmarks/results/latest.md
if [ -n "$log_size" ]; then cp Benchmarks/results/latest.md "Benchmarks/results/log-$log_size.md"; fi
if $plot; then Benchmarks/plot.sh; fi
if [ ${#over_budget[@]} -gt 0 ]; then
    printf 'over budget: %s\n' "${over_budget[@]}" >&2
    exit 1
fi
