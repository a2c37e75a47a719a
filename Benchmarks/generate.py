#!/usr/bin/env python3
"""Deterministic benchmark data for LandmarkCatalog (seeded; same bytes on every run).

  generate.py landmarks N OUT.json [--parts K]   N landmarks in the tutorial's shape, ~10% featured,
                                                  descriptions of 300-800 characters with accents, CJK
                                                  and emoji; --parts also writes OUT.partI.json files
                                                  (for the sqlite3 baseline: SQLite strings stop at 1e9 bytes)
  generate.py positions N OUT.json [--overlap BASE.json-N]
  generate.py changes N OUT.json USERS SEED   N position changes for users of a USERS-user snapshot, stamped
                                             a second before now, so each run is newer than the last
                                                  a snapshot of N users' positions in random order; with
                                                  --overlap, a second snapshot over the same users: half
                                                  newer, a quarter older, a quarter equal (ties)
"""
import json
import random
import sys

WORDS = ("granite meadow river canyon glacier summit forest trail ridge lake valley falls basin "
         "crater dune prairie island harbor cliff coast peak spring geyser arch mesa").split()
ACCENTED = ["café", "Ñandú", "Zürich", "Kraków", "São Paulo", "Dvořák", "Ålesund", "Reykjavík"]
CJK = ["富士山", "長城", "서울", "東京タワー", "漢拏山", "黄山"]
EMOJI = ["🏔️", "🌲", "🌊", "🦅", "⛰️", "🏞️"]
CATEGORIES = ["Lakes", "Rivers", "Mountains", "Canyons", "Coasts", "Deserts"]
STATES = ["Alaska", "California", "Colorado", "Montana", "Utah", "Wyoming", "Oregon", "Maine"]


def description(rng):
    target = rng.randint(300, 800)
    parts = []
    size = 0
    while size < target:
        r = rng.random()
        if r < 0.05:
            w = rng.choice(ACCENTED)
        elif r < 0.08:
            w = rng.choice(CJK)
        elif r < 0.10:
            w = rng.choice(EMOJI)
        else:
            w = rng.choice(WORDS)
        parts.append(w)
        size += len(w) + 1
    return (" ".join(parts))[:target]


def landmarks(n, out, parts):
    rng = random.Random(20261201)
    files = [open(out, "w", encoding="utf-8")]
    bounds = []
    if parts > 1:
        per = (n + parts - 1) // parts
        bounds = [per * (i + 1) for i in range(parts)]
        files += [open(out.replace(".json", f".part{i}.json"), "w", encoding="utf-8") for i in range(parts)]
    for f in files:
        f.write("[\n")
    part = 0
    first_in_part = True
    for i in range(n):
        ident = 1001 + i
        rec = {
            "name": f"Landmark {ident} {rng.choice(WORDS).title()}",
            "category": rng.choice(CATEGORIES),
            "city": rng.choice(ACCENTED + ["Moab", "Bishop"]),
            "state": rng.choice(STATES),
            "id": ident,
            "isFeatured": rng.random() < 0.1,
            "isFavorite": rng.random() < 0.2,
            "park": f"{rng.choice(WORDS).title()} National Park",
            "coordinates": {"longitude": round(rng.uniform(-180, 180), 6), "latitude": round(rng.uniform(-90, 90), 6)},
            "description": description(rng),
            "imageName": f"img{ident}",
        }
        text = json.dumps(rec, ensure_ascii=False, indent=None)
        files[0].write(("  " if i == 0 else ",\n  ") + text)
        if parts > 1:
            if i >= bounds[part]:
                part += 1
                first_in_part = True
            files[1 + part].write(("  " if first_in_part else ",\n  ") + text)
            first_in_part = False
    for f in files:
        f.write("\n]\n")
        f.close()


def iso(ms):
    import datetime
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


BASE_MS = 1795996800000  # 2026-11-30T00:00:00Z


def position_rows(n, rng):
    users = [f"user-{i:07d}" for i in range(n)]
    rng.shuffle(users)
    for u in users:
        yield {"user": u, "page": rng.randint(0, 99), "landmarkId": 1001 + rng.randint(0, 9999),
               "updatedAt": BASE_MS - rng.randint(0, 86_400_000), "counter": rng.randint(0, 3), "node": "n-bench-a", "deleted": rng.random() < 0.02}


def write_snapshot(out, rows, node):
    with open(out, "w", encoding="utf-8") as f:
        f.write('{"format":"landmark-catalog-snapshot","version":1,"node":"%s","generatedAt":"%s",\n"landmarks":[],\n"positions":[' % (node, iso(BASE_MS)))
        for i, r in enumerate(rows):
            r = dict(r)
            r["updatedAt"] = iso(r["updatedAt"])
            f.write(("\n" if i == 0 else ",\n") + json.dumps(r, separators=(",", ":")))
        f.write("]}\n")


def positions(n, out, overlap):
    rng = random.Random(n * 7 + 11)
    rows = list(position_rows(n, rng))
    if not overlap:
        write_snapshot(out, rows, "n-bench-a")
        return
    second = []
    for r in rows:
        x = rng.random()
        r = dict(r)
        if x < 0.5:
            r["updatedAt"] += rng.randint(1, 3_600_000)
            r["page"] = rng.randint(0, 99)
            r["node"] = "n-bench-b"
        elif x < 0.75:
            r["updatedAt"] -= rng.randint(1, 3_600_000)
            r["page"] = rng.randint(0, 99)
            r["node"] = "n-bench-b"
        # else: identical row (a tie on equal keys and content: a duplicate delivery)
        second.append(r)
    rng.shuffle(second)
    write_snapshot(out, second, "n-bench-b")


def changes(n, out, users, run):
    import time
    rng = random.Random(run * 31 + n)
    now = int(time.time() * 1000) - 1000
    picked = rng.sample(range(users), n)
    rows = [{"user": f"user-{u:07d}", "page": rng.randint(0, 99), "landmarkId": 1001 + rng.randint(0, 9999),
             "updatedAt": now, "counter": 0, "node": "n-bench-c", "deleted": False} for u in picked]
    write_snapshot(out, rows, "n-bench-c")


if __name__ == "__main__":
    kind, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    if kind == "landmarks":
        landmarks(n, out, int(sys.argv[5]) if len(sys.argv) > 5 and sys.argv[4] == "--parts" else 1)
    elif kind == "positions":
        positions(n, out, len(sys.argv) > 4 and sys.argv[4] == "--overlap")
    elif kind == "changes":
        changes(n, out, int(sys.argv[4]), int(sys.argv[5]))
    else:
        sys.exit(__doc__)
