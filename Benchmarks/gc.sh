#!/usr/bin/env bash
# Collection at scale (docs/erasure.md §4): N positions set, then cleared, then collected with
# `catalog gc --horizon 0s`. Prints the time of the sync that set them, of the sync that cleared them and
# of gc, and the database file's size after gc beside one that never held them (the bound: 1.05x; gc at
# most 2x the sync of the same rows).
#
#   Benchmarks/gc.sh [N]     exits 1 when a bound is not met; N positions (default 1000000); CATALOG=path/to/catalog (default
#                            .build/release/catalog, else .build/debug/catalog)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000000}
catalog=${CATALOG:-.build/release/catalog}
[ -x "$catalog" ] || catalog=.build/debug/catalog
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 - "$n" "$work" <<'PY'
import json, sys
n, work = int(sys.argv[1]), sys.argv[2]
def write(name, at, deleted):
    with open(f"{work}/{name}", "w") as f:
        f.write('{"format":"landmark-catalog-snapshot","version":1,"positions":[')
        for i in range(n):
            f.write(("," if i else "") + json.dumps({"user": f"u-{i:07d}", "page": 1, "landmarkId": 1003,
                "updatedAt": at, "counter": 0, "node": "n-gen", "deleted": deleted}))
        f.write("]}\n")
write("set.json", "2026-01-01T00:00:00.000Z", False)
write("clear.json", "2026-01-02T00:00:00.000Z", True)
PY
seconds() { local start end; start=$(date +%s.%N); "$@" >/dev/null; end=$(date +%s.%N); echo "$end - $start" | bc; }
"$catalog" --db "$work/never.sqlite" import Seeds/landmarkData.json >/dev/null
"$catalog" --db "$work/held.sqlite" import Seeds/landmarkData.json >/dev/null
set_s=$(seconds "$catalog" --db "$work/held.sqlite" sync "$work/set.json" --quiet)
clear_s=$(seconds "$catalog" --db "$work/held.sqlite" sync "$work/clear.json" --quiet)
before=$(stat -c %s "$work/held.sqlite")
gc_s=$(seconds "$catalog" --db "$work/held.sqlite" gc --horizon 0s)
after=$(stat -c %s "$work/held.sqlite")
never=$(stat -c %s "$work/never.sqlite")
echo "positions: $n ($catalog)"
echo "sync (set): ${set_s} s; sync (clear): ${clear_s} s; gc: ${gc_s} s (gc / sync of the same rows: $(echo "scale=3; $gc_s / $clear_s" | bc))"
echo "database: ${before} bytes before gc, ${after} after; never held them: ${never} ($(echo "scale=3; $after / $never" | bc)x)"
size_ratio=$(echo "scale=3; $after / $never" | bc)
time_ratio=$(echo "scale=3; $gc_s / $clear_s" | bc)
if [ "$(echo "$size_ratio <= 1.05 && $time_ratio <= 2" | bc)" -eq 1 ]; then
    echo "within the bounds: size ${size_ratio}x <= 1.05x, gc ${time_ratio}x <= 2x the sync"
else
    echo "OUT OF BOUNDS: size ${size_ratio}x (bound 1.05x), gc ${time_ratio}x the sync (bound 2x)"
    exit 1
fi
