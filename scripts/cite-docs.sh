#!/usr/bin/env bash
# Rewrites the code's citations of the product contract ("SPEC §N", a document outside the repo) and of
# README sections that moved into docs/ as citations of docs/<page>.md §N, the pages in this repository.
# Idempotent: run it again after merging a branch that still cites SPEC; it prints on stderr the SPEC
# citations it could not map (a section docs/ does not cover yet) and exits 0.
#
#   scripts/cite-docs.sh            rewrite Sources/, Tests/ (Swift and golden files) and contrib/
#   scripts/cite-docs.sh --check    change nothing; exit 1 when a citation is left to rewrite
#
# Migrations/*.sql are NOT touched: a migration's checksum covers its comments, and a changed applied
# migration is refused by every database that applied it (docs/cli.md §11). Their comments keep "SPEC §N".
#
# Where one SPEC section maps to several docs sections, the words on the citing line choose (first rule
# that matches wins); the last rule of each section is the default.
set -euo pipefail
cd "$(dirname "$0")/.."
export LC_ALL=C

check=false
case ${1:-} in
    --check) check=true ;;
    "") ;;
    *) echo "usage: scripts/cite-docs.sh [--check]" >&2; exit 64 ;;
esac

# rule ADDRESS SECTION TARGET: on lines matching ADDRESS (an extended regex, or "" for every line),
# "SPEC §SECTION" becomes TARGET.
rules=""
rule() {
    local address=$1 section=$2 target=${3//\//\\/}
    local substitution="s/SPEC §${section}([^0-9]|\$)/${target}\\1/g"
    if [ -n "$address" ]; then rules+="/${address//\//\\/}/ ${substitution}"$'\n'; else rules+="${substitution}"$'\n'; fi
}

# Two sections cited together.
rules+='s/SPEC §5, §6([^0-9]|$)/docs\/cli.md §4, docs\/snapshot-format.md §3\1/g'$'\n'

# §1 the layout: the folder map and the two libraries.
rule "" 1 "docs/architecture.md §2"

# §2 the database, §3 import, §5 positions, §8 sync: the command reference.
rule "" 2 "docs/cli.md §1"
rule "" 3 "docs/cli.md §2"
rule "" 5 "docs/cli.md §4"
rule "" 8 "docs/cli.md §7"

# §6 the snapshot file.
rule "[Ss]tamp (key|of SPEC)" 6 "docs/snapshot-format.md §4"
rule "[Ss]napshot rows?( |\\))" 6 "docs/snapshot-format.md §3"
rule "identity|Decodes one snapshot" 6 "docs/snapshot-format.md §2"
rule "snapshot file \\(SPEC" 6 "docs/snapshot-format.md §6"
rule "" 6 "docs/snapshot-format.md §1"

# §7 the merge rules.
rule "digest" 7 "docs/merge-rules.md §8"
rule "change sequence|next one \\(SPEC" 7 "docs/merge-rules.md §7"
rule "allowance|quarantin|drift" 7 "docs/merge-rules.md §6"
rule "[Ll]ater local write|clock past" 7 "docs/merge-rules.md §5"
rule "tie|fixed rule" 7 "docs/merge-rules.md §3"
rule "stamp|order key" 7 "docs/merge-rules.md §1"
rule "" 7 "docs/merge-rules.md §2"

# §9 exit statuses.
rule "" 9 "docs/exit-statuses.md §1"

# §10 snapshot logs.
rule "^/// Snapshot logs \\(SPEC" 10 "docs/log-format.md"
rule "[Mm]anifest" 10 "docs/log-format.md §2"
rule "reader|consumer|^/// \\(SPEC §10\\)\\.$" 10 "docs/log-format.md §6"
rule "[Pp]ublish|delta|\\.json" 10 "docs/log-format.md §3"
rule "" 10 "docs/log-format.md"

# §11 the PostgreSQL hub.
rule "commit-order|commit order" 11 "docs/hub.md §8"
rule "status|digest|beside this node" 11 "docs/hub.md §11"
rule "sync source" 11 "docs/hub.md §5"
rule "pull" 11 "docs/hub.md §7"
rule "push" 11 "docs/hub.md §6"
rule "schema|migrat" 11 "docs/hub.md §2"
rule "" 11 "docs/hub.md §5"

# §12 operations.
rule "what an operator sees" 12 "docs/operations.md"
rule "health|alert|--check" 12 "docs/operations.md §3"
rule "[Dd]iagnostic" 12 "docs/operations.md §5"
rule "install" 12 "docs/operations.md §1"
rule "metric|[Pp]rometheus" 12 "docs/operations.md §4"
rule "" 12 "docs/operations.md"

# README sections that moved into docs/.
rules+='s/\(README, "Running a hub"\)/(docs\/hub.md §4)/g'$'\n'
rules+='s/\(README "Running a hub"\)/(docs\/hub.md §4)/g'$'\n'
rules+='s/the note in README "PostgreSQL hub"/the note in docs\/performance.md §4/g'$'\n'
rules+='s/README says: keep one name/docs\/operations.md §9 says: keep one name/g'$'\n'
rules+='s/What README says of hard links/What docs\/operations.md §9 says of hard links/g'$'\n'
rules+='s/the README.s staleness alert/the staleness alert of docs\/operations.md §3/g'$'\n'
rules+='s/\(see README, "Operating it"\)/(see docs\/operations.md §2)/g'$'\n'

# The files that cite: Swift sources and tests, the golden help texts, contrib/.
mapfile -t files < <(git ls-files -- 'Sources/*.swift' 'Tests/*.swift' 'Tests/Golden/*' 'contrib/*' \
    | xargs -r grep -lE 'SPEC §[0-9]|README(,)? "|README says|What README says|README.s staleness' || true)

changed=0
scratch=$(mktemp)
trap 'rm -f "$scratch"' EXIT
for file in "${files[@]}"; do
    sed -E "$rules" "$file" > "$scratch"
    if ! cmp -s "$scratch" "$file"; then
        changed=$((changed + 1))
        if $check; then
            echo "cite-docs: $file cites SPEC or a moved README section" >&2
        else
            cat "$scratch" > "$file"  # in place: the file keeps its mode
        fi
    fi
done

left=$(git ls-files -- 'Sources/*.swift' 'Tests/*.swift' 'Tests/Golden/*' 'contrib/*' | xargs -r grep -nE 'SPEC §[0-9]' || true)
if [ -n "$left" ]; then
    echo "cite-docs: SPEC citations with no docs/ section yet (add one to docs/ and a rule here):" >&2
    echo "$left" >&2
fi
if $check; then
    [ "$changed" -eq 0 ] || exit 1
else
    echo "cite-docs: rewrote $changed files" >&2
fi
