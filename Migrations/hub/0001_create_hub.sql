-- The PostgreSQL hub (SPEC §11): the rows every edge pushes and pulls, the hub's change sequence, its
-- identity, per-edge bookkeeping and the hub-side quarantine. Created by `catalog` on the first sync
-- with the hub (PostgreSQL 13 or later: gen_random_uuid() is built in since 13).
-- Text that takes part in the last-writer-wins order (node ids, landmark bodies, user ids) is
-- COLLATE "C": compared as bytes, exactly as the edges compare them (memcmp order of UTF-8).

-- The hub's identity: a random id made once. A hub dropped and created again has another one, so the
-- edges notice (their cursors name the old id) and start over: push everything, pull everything.
CREATE TABLE hub_identity (
    singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    hub_id     text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO hub_identity (hub_id) VALUES (gen_random_uuid()::text);

-- The hub's change sequence: every row a push writes takes the next number. Pushes take their numbers
-- while holding a transaction-scoped advisory lock until they commit, so numbers become visible in
-- order and a pull that reads `seq > cursor` never skips one. CACHE 1 (the default) keeps the numbers of
-- one push contiguous.
CREATE SEQUENCE hub_change_seq AS bigint CACHE 1;

-- One row per landmark id: its canonical content JSON (the bytes the tie rule orders) and its stamp.
CREATE TABLE landmarks (
    id         bigint PRIMARY KEY,
    body       text COLLATE "C" NOT NULL,
    updated_ms bigint NOT NULL,                 -- ms since 1970-01-01 UTC
    counter    bigint NOT NULL CHECK (counter BETWEEN 0 AND 4294967295),
    node       text COLLATE "C" NOT NULL,
    deleted    boolean NOT NULL,
    seq        bigint NOT NULL                  -- hub_change_seq at the row's last change
);
CREATE INDEX landmarks_seq ON landmarks (seq);

-- One row per user: the carousel page, the landmark shown on it (NULL for none) and the stamp.
CREATE TABLE positions (
    user_id     text COLLATE "C" PRIMARY KEY,
    page        bigint NOT NULL CHECK (page >= 0),
    landmark_id bigint,
    updated_ms  bigint NOT NULL,
    counter     bigint NOT NULL CHECK (counter BETWEEN 0 AND 4294967295),
    node        text COLLATE "C" NOT NULL,
    deleted     boolean NOT NULL,
    seq         bigint NOT NULL
);
CREATE INDEX positions_seq ON positions (seq);

-- Per edge (by node id): its last push and pull, for operators (`SELECT * FROM hub_edges`).
CREATE TABLE hub_edges (
    node              text COLLATE "C" PRIMARY KEY,
    first_seen_at     timestamptz NOT NULL DEFAULT now(),
    last_push_at      timestamptz,
    push_through      bigint,          -- the edge's local change sequence number its last push covered
    last_push_rows    bigint,          -- rows that push sent
    last_push_applied bigint,          -- of them, rows that won and were written
    last_pull_at      timestamptz,
    pull_through      bigint,          -- the hub change sequence number its last pull read through
    catalog_version   text
);

-- Rows pushed with a stamp further ahead of the hub's clock than the pushing edge's --max-drift: kept
-- here, not applied, until the hub's clock has caught up with them (a later push then applies them
-- with the same last-writer-wins rule). One row per key and stamp; a tie keeps the rule's winner.
CREATE TABLE hub_quarantine (
    kind        text NOT NULL CHECK (kind IN ('landmark', 'position')),
    row_key     text COLLATE "C" NOT NULL,   -- the landmark id as decimal text, or the user id
    updated_ms  bigint NOT NULL,
    counter     bigint NOT NULL,
    node        text COLLATE "C" NOT NULL,
    deleted     boolean NOT NULL,
    body        text COLLATE "C",            -- landmarks
    page        bigint,                      -- positions
    landmark_id bigint,                      -- positions
    received_at timestamptz NOT NULL DEFAULT now(),
    edge        text NOT NULL,               -- the node that pushed it
    PRIMARY KEY (kind, row_key, updated_ms, counter, node)
);
CREATE INDEX hub_quarantine_due ON hub_quarantine (updated_ms);
