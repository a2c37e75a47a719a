import LandmarkCatalog

/// The hub's SQL, named once: staging tables, the last-writer-wins upserts (their `WHERE` is
/// ``LastWriterWins/sqlIncomingWins(incoming:stored:content:)``, the same rule the edges apply in Swift),
/// the hub-side quarantine, the pull queries and the state digest.
///
/// Values always travel as `$n` parameters or through `COPY`; these texts hold only SQL.
enum HubSQL {
    /// The advisory lock key every push holds from before its first `nextval` until it commits
    /// (`lchub_pu` in ASCII).
    ///
    /// PostgreSQL "Explicit Locking", Advisory Locks
    /// (https://www.postgresql.org/docs/15/explicit-locking.html#ADVISORY-LOCKS).
    static let pushLockKey: Int64 = 0x6C63_6875_625F_7075

    /// The smallest bigint: the tie rule's value for a position without a landmark (as in Swift,
    /// `landmark ?? Int64.min`).
    static let noLandmark = "(-9223372036854775807 - 1)"

    /// The hub's clock in ms since 1970-01-01 UTC.
    static let nowMilliseconds = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint"

    // MARK: Push

    /// The push's staging tables: temporary, private to the transaction, dropped at its end.
    ///
    /// PostgreSQL "CREATE TABLE", `TEMPORARY` and `ON COMMIT DROP`.
    static let createStaging = """
        CREATE TEMPORARY TABLE catalog_push_landmarks (
            id bigint NOT NULL, body text COLLATE "C" NOT NULL, updated_ms bigint NOT NULL, counter bigint NOT NULL,
            node text COLLATE "C" NOT NULL, deleted boolean NOT NULL
        ) ON COMMIT DROP;
        CREATE TEMPORARY TABLE catalog_push_positions (
            user_id text COLLATE "C" NOT NULL, page bigint NOT NULL, landmark_id bigint, updated_ms bigint NOT NULL,
            counter bigint NOT NULL, node text COLLATE "C" NOT NULL, deleted boolean NOT NULL
        ) ON COMMIT DROP
        """

    /// `COPY … FROM STDIN` (text format) into the staging tables.
    ///
    /// PostgreSQL "COPY" (https://www.postgresql.org/docs/15/sql-copy.html).
    static let copyLandmarks = "COPY catalog_push_landmarks (id, body, updated_ms, counter, node, deleted) FROM STDIN"
    static let copyPositions = "COPY catalog_push_positions (user_id, page, landmark_id, updated_ms, counter, node, deleted) FROM STDIN"

    /// The tie rule's content of a landmark: its canonical body, compared as bytes (`COLLATE "C"`).
    static func landmarkContent(_ alias: String) -> [String] { ["\(alias).body"] }
    /// The tie rule's content of a position: (page, landmark id, no landmark lowest).
    static func positionContent(_ alias: String) -> [String] { ["\(alias).page", "coalesce(\(alias).landmark_id, \(noLandmark))"] }

    /// Upserts rows of `source` (the staging table, or released quarantine rows) into `landmarks`: each
    /// row takes the next hub sequence number, and replaces the stored row only when last-writer-wins
    /// says so.
    ///
    /// The command tag counts the rows written (no `RETURNING`: at a million rows it would cost a tenth
    /// of the statement; the numbers taken are read from the sequence instead). `$1`: the quarantine
    /// limit (rows stamped later stay out). `prelude`: `WITH` queries that `source` may name (without
    /// the `WITH`).
    static func upsertLandmarks(from source: String, with prelude: String = "") -> String {
        """
        \(prelude.isEmpty ? "" : "WITH " + prelude)INSERT INTO landmarks (id, body, updated_ms, counter, node, deleted, seq, h0, h1, h2, h3)
        SELECT id, body, updated_ms, counter, node, deleted, nextval('hub_change_seq'), \(lanes)
        FROM (SELECT s.*, \(landmarkHash("s")) AS h FROM \(source) AS s OFFSET 0) AS s
        WHERE s.updated_ms <= $1 AND NOT \(expired("s", table: "landmarks", key: "id"))
        ON CONFLICT (id) DO UPDATE SET body = excluded.body, updated_ms = excluded.updated_ms, counter = excluded.counter,
            node = excluded.node, deleted = excluded.deleted, seq = excluded.seq, \(setLanes)
        WHERE \(LastWriterWins.sqlIncomingWins(incoming: "excluded", stored: "landmarks", content: landmarkContent))
        """
    }

    /// As ``upsertLandmarks(from:with:)``, for `positions`.
    static func upsertPositions(from source: String, with prelude: String = "") -> String {
        """
        \(prelude.isEmpty ? "" : "WITH " + prelude)INSERT INTO positions (user_id, page, landmark_id, updated_ms, counter, node, deleted, seq,
            h0, h1, h2, h3)
        SELECT user_id, page, landmark_id, updated_ms, counter, node, deleted, nextval('hub_change_seq'), \(lanes)
        FROM (SELECT s.*, \(positionHash("s")) AS h FROM \(source) AS s OFFSET 0) AS s
        WHERE s.updated_ms <= $1 AND NOT \(erased("s")) AND NOT \(expired("s", table: "positions", key: "user_id"))
        ON CONFLICT (user_id) DO UPDATE SET page = excluded.page, landmark_id = excluded.landmark_id,
            updated_ms = excluded.updated_ms, counter = excluded.counter, node = excluded.node, deleted = excluded.deleted,
            seq = excluded.seq, \(setLanes)
        WHERE \(LastWriterWins.sqlIncomingWins(incoming: "excluded", stored: "positions", content: positionContent))
        """
    }

    /// The row hash of the landmark `alias` (its columns named as in `landmarks`): the hub's one definition,
    /// `catalog_landmark_hash` (hub migration 8), the SQL of ``RowHash/init(landmark:)``.
    static func landmarkHash(_ alias: String) -> String {
        "catalog_landmark_hash(\(alias).id, \(alias).updated_ms, \(alias).counter, \(alias).node, \(alias).deleted, \(alias).body)"
    }

    /// The row hash of the position `alias`: `catalog_position_hash`, the SQL of ``RowHash/init(position:)``.
    static func positionHash(_ alias: String) -> String {
        "catalog_position_hash(\(alias).user_id, \(alias).updated_ms, \(alias).counter, \(alias).node, \(alias).deleted, \(alias).page, \(alias).landmark_id)"
    }

    /// The row hash of the erasure record `alias`: `catalog_erasure_hash`, the SQL of ``RowHash/init(erasure:)``.
    static func erasureHash(_ alias: String) -> String {
        "catalog_erasure_hash(\(alias).user_hash, \(alias).updated_ms, \(alias).counter, \(alias).node)"
    }

    /// The four lanes of the hash `h` (``RowHash``: 32-bit unsigned, big-endian), as a select list.
    ///
    /// The upserts compute `h` once per row in a subquery kept apart by `OFFSET 0` (else the planner copies
    /// the hash into each lane): measured at 1M positions, 1.4 s for the hash and its lanes, against 5.6 s
    /// through a non-inlined function and 12 s hashing per lane.
    static let lanes = "catalog_hash_lane(h, 0), catalog_hash_lane(h, 1), catalog_hash_lane(h, 2), catalog_hash_lane(h, 3)"
    static let setLanes = "h0 = excluded.h0, h1 = excluded.h1, h2 = excluded.h2, h3 = excluded.h3"

    /// Whether the position `alias` (a staged or released row) is refused as erased.
    ///
    /// A stored erasure of its user is stamped at or after it: the SQL of ``ErasureRule/refusal(row:erasure:hasStoredRow:horizonMilliseconds:)``'s
    /// `erased` case (``ErasureRule/erases(_:row:)``); `HubCollectionTests` checks that the two agree.
    static func erased(_ alias: String) -> String {
        """
        EXISTS (SELECT 1 FROM hub_erasures e WHERE e.user_hash = \(userHash("\(alias).user_id"))
                  AND (\(alias).updated_ms, \(alias).counter, \(alias).node) <= (e.updated_ms, e.counter, e.node))
        """
    }

    /// The hub's collection horizon (ms since the epoch, UTC; 0 before any collection): `hub_meta`'s
    /// `gc_horizon_ms`, read by the statement that uses it (docs/erasure.md §7).
    static let horizon = "coalesce((SELECT value FROM hub_meta WHERE key = 'gc_horizon_ms'), 0)"

    /// Whether the row `alias` is refused as expired.
    ///
    /// It is stamped before the hub's horizon while `table` holds no row of its key (`key`, the column
    /// named alike in both): the SQL of
    /// ``ErasureRule/refusal(row:erasure:hasStoredRow:horizonMilliseconds:)``'s `expired` case, applied
    /// after its `erased` case (the upserts and ``expiredRows(kind:)`` test erased first);
    /// `HubCollectionTests` checks that the two agree.
    static func expired(_ alias: String, table: String, key: String) -> String {
        "(\(alias).updated_ms < \(horizon) AND NOT EXISTS (SELECT 1 FROM \(table) t WHERE t.\(key) = \(alias).\(key)))"
    }

    /// The staged rows of `kind` (`landmark` or `position`) that the upsert will refuse as expired (not
    /// quarantined: stamped at or before `$1`, the quarantine limit; not erased), read before it runs:
    /// key as text, then the stamp (`updated_ms`, `counter`, `node`).
    static func expiredRows(kind: String) -> String {
        let landmark = kind == "landmark"
        let (table, staged, key) = landmark ? ("landmarks", "catalog_push_landmarks", "id") : ("positions", "catalog_push_positions", "user_id")
        return """
            SELECT s.\(key)::text, s.updated_ms, s.counter, s.node FROM \(staged) s
            WHERE s.updated_ms <= $1\(landmark ? "" : " AND NOT " + erased("s")) AND \(expired("s", table: table, key: key))
            """
    }

    /// The erasure rule's key of a user id expression: the SHA-256 of its UTF-8 bytes in lowercase hex, as
    /// ``ErasureRule`` computes it on the edges.
    static func userHash(_ user: String) -> String { "encode(sha256(convert_to(\(user), 'UTF8')), 'hex')" }

    /// Stores an erasure (`$1` user hash, `$2`–`$4` its stamp) when it is greater than the user's stored one,
    /// taking the next hub number (docs/erasure.md §1); affects one row when it was stored.
    static let upsertErasure = """
        INSERT INTO hub_erasures (user_hash, updated_ms, counter, node, seq) VALUES ($1, $2, $3, $4, nextval('hub_change_seq'))
        ON CONFLICT (user_hash) DO UPDATE SET updated_ms = excluded.updated_ms, counter = excluded.counter, node = excluded.node,
            seq = excluded.seq
        WHERE (excluded.updated_ms, excluded.counter, excluded.node) > (hub_erasures.updated_ms, hub_erasures.counter, hub_erasures.node)
        """

    /// Deletes the position of the user whose hash is `$1` when stamped at or before `$2`–`$4`.
    ///
    /// An erasure applied: one lookup in the index `positions_user_hash` on `catalog_user_hash(user_id)`
    /// (hub migration 7; the function is ``userHash(_:)``'s expression, declared IMMUTABLE), not a pass
    /// over every position.
    static let eraseUser = """
        DELETE FROM positions WHERE catalog_user_hash(user_id) = $1 AND (updated_ms, counter, node) <= ($2, $3, $4)
        """

    /// Whether this role may push erasures (docs/hub.md §4).
    static let canPushErasures = "SELECT has_table_privilege('hub_erasures', 'INSERT') AND has_table_privilege('positions', 'DELETE')"

    /// Erasures numbered after `$1`, except `$2…$3` (as ``pullPositions``).
    static let pullErasures = """
        SELECT user_hash, updated_ms, counter, node, seq FROM hub_erasures WHERE seq > $1 AND NOT (seq BETWEEN $2 AND $3)
        """

    /// The last number the hub sequence issued (0 when none).
    ///
    /// Read under the push lock, it is stable: only pushes call `nextval`, and they hold the lock.
    /// Whether this role may push (docs/hub.md §4): write both row tables and make the push's
    /// temporary staging tables. A role that may only read syncs pull-only.
    static let canPush = """
        SELECT has_table_privilege('landmarks', 'INSERT') AND has_table_privilege('landmarks', 'UPDATE')
           AND has_table_privilege('positions', 'INSERT') AND has_table_privilege('positions', 'UPDATE')
           AND has_database_privilege(current_database(), 'TEMPORARY')
        """

    static let lastSequence = "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM hub_change_seq"

    /// The content of quarantined rows (both kinds in one table), in the tie rule's order.
    static func quarantineContent(_ alias: String) -> [String] {
        let prefix = alias.isEmpty ? "" : alias + "."
        return ["coalesce(\(prefix)body, '')", "coalesce(\(prefix)page, -1)", "coalesce(\(prefix)landmark_id, \(noLandmark))"]
    }

    /// Holds back staged rows stamped beyond `$1` (the hub's clock plus the drift allowance), pushed by
    /// node `$2`.
    ///
    /// Returns (rows held back, rows newly kept).
    static func quarantine(kind: String) -> String {
        let (table, key, columns) =
            kind == "landmark"
            ? ("catalog_push_landmarks", "id::text", "body, NULL::bigint, NULL::bigint")
            : ("catalog_push_positions", "user_id", "NULL::text, page, landmark_id")
        return """
            WITH held AS (SELECT * FROM \(table) WHERE updated_ms > $1),
            kept AS (
                INSERT INTO hub_quarantine (kind, row_key, updated_ms, counter, node, deleted, body, page, landmark_id, edge)
                SELECT '\(kind)', \(key), updated_ms, counter, node, deleted, \(columns), $2 FROM held
                ON CONFLICT (kind, row_key, updated_ms, counter, node) DO UPDATE SET deleted = excluded.deleted, body = excluded.body,
                    page = excluded.page, landmark_id = excluded.landmark_id, edge = excluded.edge, received_at = now()
                WHERE \(LastWriterWins.sqlTieWins("excluded", over: "hub_quarantine", content: quarantineContent))
                RETURNING 1
            )
            SELECT (SELECT count(*) FROM held), (SELECT count(*) FROM kept)
            """
    }

    /// Whether quarantined rows are due (stamped at or before `$1`).
    static let quarantineDue = "SELECT EXISTS (SELECT 1 FROM hub_quarantine WHERE updated_ms <= $1)"

    /// Takes the quarantined rows of `kind` that are due (stamped at or before `$1`) out of the
    /// quarantine and upserts the greatest per key (by last-writer-wins) like pushed rows, in one
    /// statement; its command tag counts the rows written.
    static func releaseQuarantine(kind: String) -> String {
        let landmark = kind == "landmark"
        let prelude = """
            due AS (DELETE FROM hub_quarantine WHERE kind = '\(kind)' AND updated_ms <= $1 RETURNING *),
            released AS (
                SELECT DISTINCT ON (row_key) \(landmark ? "row_key::bigint AS id, body" : "row_key AS user_id, page, landmark_id"),
                    updated_ms, counter, node, deleted
                FROM due ORDER BY row_key, \(LastWriterWins.sqlWinnerFirst(content: quarantineContent("")))
            )

            """
        return landmark ? upsertLandmarks(from: "released", with: prelude) : upsertPositions(from: "released", with: prelude)
    }

    /// Records a push in the edge's bookkeeping row: `$1` node, `$2` local change sequence number pushed
    /// through, `$3` rows sent, `$4` rows written, `$5` catalog version.
    static let notePush = """
        INSERT INTO hub_edges (node, last_push_at, push_through, last_push_rows, last_push_applied, catalog_version)
        VALUES ($1, now(), $2, $3, $4, $5)
        ON CONFLICT (node) DO UPDATE SET last_push_at = excluded.last_push_at, push_through = excluded.push_through,
            last_push_rows = excluded.last_push_rows, last_push_applied = excluded.last_push_applied,
            catalog_version = excluded.catalog_version
        """

    // MARK: Pull

    /// The pull's transaction: one snapshot of the whole hub, read-only.
    ///
    /// PostgreSQL "Transaction Isolation", Repeatable Read
    /// (https://www.postgresql.org/docs/15/transaction-iso.html#XACT-REPEATABLE-READ).
    static let pullIsolation = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"

    /// Landmarks changed after `$1`, except those numbered `$2…$3` (this edge's own push, which it has).
    ///
    /// In key order, not change order: a pull is one SQLite transaction, so the order is free, and rows
    /// that arrive in the edge's B-tree order are appended, not scattered (a 1M-row pull into an empty
    /// edge: 5.5–6.4 s in change order, see the note in docs/performance.md §4). PostgreSQL reads the
    /// primary key when most rows qualify and sorts the few otherwise (its planner sees the values).
    /// `COLLATE "C"` on the hub's text keys is byte order, the order the merger sorts a batch in.
    static let pullLandmarks = """
        SELECT id, body, updated_ms, counter, node, deleted, seq FROM landmarks WHERE seq > $1 AND NOT (seq BETWEEN $2 AND $3)
        ORDER BY id
        """
    /// Positions changed after `$1`, except `$2…$3`, in user-id order (as ``pullLandmarks``).
    static let pullPositions = """
        SELECT user_id, page, landmark_id, updated_ms, counter, node, deleted, seq FROM positions
        WHERE seq > $1 AND NOT (seq BETWEEN $2 AND $3) ORDER BY user_id
        """
    /// Rows of the given keys (`$1`, an array) numbered at most `$2`: quarantined rows delivered again
    /// once this edge's clock has caught up with them.
    static let redeliverLandmarks = """
        SELECT id, body, updated_ms, counter, node, deleted, seq FROM landmarks WHERE id = ANY ($1::bigint[]) AND seq <= $2
        """
    static let redeliverPositions = """
        SELECT user_id, page, landmark_id, updated_ms, counter, node, deleted, seq FROM positions
        WHERE user_id = ANY ($1::text[]) AND seq <= $2
        """

    // MARK: History (docs/hub.md, "Restoring a hub")

    /// Records a push that took hub numbers: `$1` the last number it took, `$2` the pushing node.
    ///
    /// Run under the push lock, so history rows appear in sequence order. Returns the hub's random token
    /// for it.
    static let noteHistory = """
        INSERT INTO hub_history (seq, token, node) VALUES ($1, gen_random_uuid()::text, $2) RETURNING token
        """

    /// A baseline history row at `$1` (an emptied history starting again, docs/hub.md §9); its token, or no
    /// row when another edge wrote one at that number first.
    static let noteBaseline = """
        INSERT INTO hub_history (seq, token, node) VALUES ($1, gen_random_uuid()::text, '') ON CONFLICT (seq) DO NOTHING RETURNING token
        """

    /// The newest history row at or below `$1` (a pull cursor): the mark an edge keeps with its cursor.
    static let historyMark = "SELECT seq, token FROM hub_history WHERE seq <= $1 ORDER BY seq DESC LIMIT 1"

    /// The token of the history row at `$1`: an edge's mark still on the hub, or not (a restore).
    static let historyToken = "SELECT token FROM hub_history WHERE seq = $1"

    /// Records a pull: `$1` node, `$2` hub sequence number read through.
    static let notePull = """
        INSERT INTO hub_edges (node, last_pull_at, pull_through) VALUES ($1, now(), $2)
        ON CONFLICT (node) DO UPDATE SET last_pull_at = excluded.last_pull_at, pull_through = excluded.pull_through
        """

    // MARK: Collection (docs/erasure.md §7)

    /// Whether a row whose `deleted` is the expression `deleted` counts in the digest at the horizon `$1`:
    /// the SQL of ``ErasureRule/countsInDigest(deleted:stamp:horizonMilliseconds:)`` (an erasure record
    /// counts as deleted); `HubCollectionTests` checks that the two agree.
    static func countsInDigest(deleted: String) -> String { "(NOT \(deleted) OR NOT \(collected))" }

    /// Whether the row in scope is collected at the horizon `$1`: the SQL of
    /// ``ErasureRule/collected(_:horizonMilliseconds:)``.
    static let collected = "updated_ms < $1"

    /// The hub's horizon and the wall time of the newest row stamp it holds (0 when none): what the horizon of
    /// a collection is measured from (``ErasureRule/collectionHorizon(stored:nowMilliseconds:newestMilliseconds:age:)``).
    ///
    /// Only `landmarks` and `positions` count: their stamps passed the drift check against the hub's clock
    /// (a row stamped further ahead waits in `hub_quarantine`). Erasure records do not: they are applied
    /// however far ahead they are stamped (docs/erasure.md §1), so one from a clock years ahead would let a
    /// collector whose clock is ahead too move the hub's horizon past every new row (docs/erasure.md §7).
    static let collectionClock = """
        SELECT \(horizon), coalesce(greatest((SELECT max(updated_ms) FROM landmarks), (SELECT max(updated_ms) FROM positions)), 0)
        """

    /// Deletes the tombstones and erasure records collected at the horizon `$1`; one statement per table,
    /// each answering with the rows it removed.
    static let collectLandmarks = "DELETE FROM landmarks WHERE deleted AND \(collected)"
    static let collectPositions = "DELETE FROM positions WHERE deleted AND \(collected)"
    static let collectErasures = "DELETE FROM hub_erasures WHERE \(collected)"

    /// Records the horizon `$1` in `hub_meta`, never moving it back.
    static let setHorizon = """
        INSERT INTO hub_meta (key, value) VALUES ('gc_horizon_ms', $1)
        ON CONFLICT (key) DO UPDATE SET value = greatest(hub_meta.value, excluded.value)
        """

    // MARK: Digest

    /// The state digest (``StateDigest``) computed inside PostgreSQL: each row's canonical text
    /// (`L`/`P`, fields joined by LF, exactly as ``StateDigest/landmarkText(_:content:)`` and
    /// ``StateDigest/positionText(_:)`` write it), SHA-256, its first 16 bytes read as two signed 64-bit
    /// numbers and summed; the sums reduced modulo 2⁶⁴ as unsigned numbers, and the row count.
    ///
    /// Rows count only as ``countsInDigest(deleted:)`` says at the horizon `$1` (ms since the epoch, UTC):
    /// a hub and an edge that collected at different times agree when digested at the same horizon
    /// (docs/erasure.md §5).
    ///
    /// Returns (rows, high, low) with high and low as decimal text in 0…2⁶⁴−1.
    static let digest = """
        WITH hashes AS (
            SELECT \(landmarkHash("l")) AS h FROM landmarks l WHERE \(countsInDigest(deleted: "deleted"))
            UNION ALL
            SELECT \(positionHash("p")) FROM positions p WHERE \(countsInDigest(deleted: "deleted"))
            UNION ALL
            SELECT \(erasureHash("e")) FROM hub_erasures e WHERE \(countsInDigest(deleted: "true"))
        ),
        halves AS (
            SELECT ('x' || encode(substring(h FROM 1 FOR 8), 'hex'))::bit(64)::bigint AS high,
                   ('x' || encode(substring(h FROM 9 FOR 8), 'hex'))::bit(64)::bigint AS low
            FROM hashes
        )
        SELECT count(*),
               ((coalesce(sum(high), 0) % 18446744073709551616 + 18446744073709551616) % 18446744073709551616)::text,
               ((coalesce(sum(low), 0) % 18446744073709551616 + 18446744073709551616) % 18446744073709551616)::text
        FROM halves
        """
}
