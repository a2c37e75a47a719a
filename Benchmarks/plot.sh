#!/usr/bin/env bash
# Draws docs/cost.svg: what a peer spends to receive ONE change, against the catalog's size — by a
# full-snapshot sync (what a single snapshot file costs) and through a snapshot log — in seconds and in
# bytes fetched, both axes logarithmic.
#
#   Benchmarks/plot.sh [TABLE.md ...]    default: docs/performance.md and Benchmarks/results/*.md
#
# The figures come from the Markdown tables Benchmarks/run.sh prints (its snapshot-log cases, run with
# --log, --log --quick, or --log-size N): the rows "sync full snapshot (1 change(s))", "consumer sync
# after 1 change(s)", "full snapshot bytes fetched" and "bytes fetched after 1 change(s)", by size. When
# several tables give the same size, the last one read wins. Needs gnuplot (Debian: gnuplot-nox); without
# it this says so and exits 0, leaving the picture as it is.
set -euo pipefail
cd "$(dirname "$0")/.."

output=docs/cost.svg
if [ $# -eq 0 ]; then
    set -- docs/performance.md
    for file in Benchmarks/results/*.md; do [ -e "$file" ] && set -- "$@" "$file"; done
fi
if ! command -v gnuplot >/dev/null; then
    echo "plot.sh: gnuplot is not installed (apt-get install gnuplot-nox); $output left as it is" >&2
    exit 0
fi

data=$(mktemp)
trap 'rm -f "$data"' EXIT
# One line per size: size, full-sync seconds, log-sync seconds, full bytes, log bytes.
awk -F'|' '
    function trim(s) { gsub(/^[ \t]+|[ \t]+$/, "", s); return s }
    function number(s) { s = trim(s); sub(/ bytes$/, "", s); gsub(/,/, "", s); return s + 0 }
    NF >= 6 {
        what = trim($2); size = number($3); value = number($5)
        if (size <= 0) next
        if (what == "sync full snapshot (1 change(s))") full[size] = value
        else if (what == "consumer sync after 1 change(s)") incremental[size] = value
        else if (what == "full snapshot bytes fetched") fullBytes[size] = value
        else if (what == "bytes fetched after 1 change(s)") logBytes[size] = value
        else next
        sizes[size] = 1
    }
    END {
        for (size in sizes)
            if ((size in full) && (size in incremental) && (size in fullBytes) && (size in logBytes))
                printf "%d %s %s %s %s\n", size, full[size], incremental[size], fullBytes[size], logBytes[size]
    }' "$@" | sort -n >"$data"

if [ ! -s "$data" ]; then
    echo "plot.sh: no snapshot-log figures in $* (run Benchmarks/run.sh --log first); $output left as it is" >&2
    exit 0
fi
echo "plot.sh: $(wc -l <"$data") catalog sizes from $*" >&2

# Times under 10 ms are below what /usr/bin/time resolves (it reports 0.00): drawn at 10 ms.
gnuplot <<EOF
set terminal svg size 900,380 font "sans,12" background "white"
set output "$output"
set multiplot layout 1,2 title "Receiving one change: a full-snapshot sync against a snapshot log"
set logscale xy
set xrange [5000:5000000]
set xtics ("10k" 10000, "100k" 100000, "1M" 1000000)
set xlabel "catalog size (landmarks + positions)"
set key top left box opaque
set grid xtics ytics lc rgb "#dddddd"
set style line 1 lc rgb "#c0392b" lw 2 pt 7 ps 0.7
set style line 2 lc rgb "#2471a3" lw 2 pt 5 ps 0.7
set ylabel "seconds (median)"
set yrange [0.005:50]
set ytics ("0.01" 0.01, "0.1" 0.1, "1" 1, "10" 10)
plot "$data" using 1:(\$2 > 0.01 ? \$2 : 0.01) with linespoints ls 1 title "full snapshot", \
     "$data" using 1:(\$3 > 0.01 ? \$3 : 0.01) with linespoints ls 2 title "snapshot log"
set ylabel "bytes fetched"
set yrange [300:1e10]
set ytics ("1 kB" 1e3, "1 MB" 1e6, "1 GB" 1e9)
plot "$data" using 1:4 with linespoints ls 1 title "full snapshot", \
     "$data" using 1:5 with linespoints ls 2 title "snapshot log"
unset multiplot
EOF
echo "plot.sh: wrote $output" >&2
