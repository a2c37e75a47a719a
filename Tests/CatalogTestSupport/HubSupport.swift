// The test support is built for debug test runs only: its `@testable` imports need modules compiled for
// testing, which a release build (`swift build -c release`) does not make.
#if DEBUG
    import Foundation

    @testable import LandmarkCatalog
    @testable import LandmarkCatalogSync

    #if canImport(Glibc)
        import Glibc
    #endif

    /// Hub databases on the throwaway server (`PostgresServer`) and small helpers for the hub suites.
    package enum HubSupport {
        /// A fresh, empty hub database; returns its URI (TCP, user `postgres`, trust) and name.
        package static func makeHub(_ server: PostgresServer) throws -> (uri: String, name: String) {
            let name = try server.createDatabaseName()
            return (server.uri(database: name), name)
        }

        /// A fresh database owned by the password role (it may create the hub's tables there).
        package static func makePasswordHub(_ server: PostgresServer) throws -> String {
            let name = "pw_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(20).lowercased()
            try admin(server).executeScript(sql: "CREATE DATABASE \(name) OWNER \(PostgresServer.passwordRole)")
            return name
        }

        /// A superuser connection to the server's `postgres` database over the Unix socket.
        package static func admin(_ server: PostgresServer) throws -> PGConnection {
            try PGConnection(
                conninfo: "host=\(server.socketDirectory) port=\(server.port) user=postgres dbname=postgres application_name=catalog-tests")
        }

        /// A superuser connection to `database` (named `catalog-tests`, so it is told apart from edges' `catalog`).
        package static func connect(_ server: PostgresServer, _ database: String) throws -> PGConnection {
            try PGConnection(
                conninfo: "host=\(server.socketDirectory) port=\(server.port) user=postgres dbname=\(database) application_name=catalog-tests")
        }

        /// The first column of the first row of `sql` on `database`, as text.
        package static func scalar(_ server: PostgresServer, _ database: String, _ sql: String, _ params: [PGValue?] = []) throws -> String? {
            try connect(server, database).execute(sql: sql, params).text(0, 0)
        }

        /// The hub's rows, replicated columns only, sorted: to compare with an edge.
        package static func hubPositions(_ server: PostgresServer, _ database: String) throws -> [String] {
            let result = try connect(server, database).execute(
                sql: """
                    SELECT user_id || '|' || page || '|' || coalesce(landmark_id::text, '') || '|' || updated_ms || '|' || counter || '|' || node || '|'
                           || CASE WHEN deleted THEN 't' ELSE 'f' END
                    FROM positions ORDER BY user_id COLLATE "C"
                    """)
            return (0..<result.rowCount).map { result.text($0, 0) ?? "" }
        }

        /// An edge's positions in the same form as ``hubPositions(_:_:)``.
        package static func edgePositions(_ db: String) throws -> [String] {
            try dumpRows(
                db,
                sql: """
                    SELECT user_id || '|' || page || '|' || coalesce(landmark_id, '') || '|' || updated_ms || '|' || counter || '|' || node || '|'
                           || CASE deleted WHEN 1 THEN 't' ELSE 'f' END
                    FROM positions ORDER BY user_id
                    """
            ).map { row in
                if case .text(let s) = row[0] { return s }
                return "?"
            }
        }

        /// A small `landmarkData.json` with the given landmarks (ids, names; featured ones first page).
        package static func landmarkFile(_ records: [(id: Int, name: String, featured: Bool, description: String?)]) throws -> String {
            let items = records.map { r in
                #"{"id": \#(r.id), "name": \#(jsonString(r.name)), "isFeatured": \#(r.featured), "coordinates": {"latitude": 47.5, "longitude": -122.25}, "category": "Rivers", "description": \#(r.description.map(jsonString) ?? "null")}"#
            }
            return try writeTemporary("[" + items.joined(separator: ",\n") + "]", name: "landmarks.json")
        }

        /// `s` as a JSON string literal.
        package static func jsonString(_ s: String) -> String {
            var w = JSONWriter()
            w.string(s)
            return String(decoding: w.bytes, as: UTF8.self)
        }

        /// The `status --json` object of `db`, decoded.
        package static func status(_ db: String) throws -> [String: Any] {
            let result = runCLI(["status", "--json"], db: db)
            guard result.status == 0, let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any] else {
                throw CatalogError(.software, "status failed: \(result.status) \(result.stderr)")
            }
            return object
        }

        /// The first hub entry of `status --json`.
        package static func hubStatus(_ db: String) throws -> [String: Any] {
            guard let hubs = try status(db)["hubs"] as? [[String: Any]], let first = hubs.first else {
                throw CatalogError(.software, "status shows no hub")
            }
            return first
        }

        /// Waits (polling every 20 ms, at most `seconds`) until `condition` holds; returns whether it did.
        package static func wait(seconds: Double = 20, _ condition: () throws -> Bool) rethrows -> Bool {
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline {
                if try condition() { return true }
                usleep(20_000)
            }
            return try condition()
        }
    }

    /// A value handed between test threads.
    package final class Locked<Value>: @unchecked Sendable {
        private let lock = NSLock()
        private var value: Value
        package init(_ value: Value) { self.value = value }
        package var current: Value { lock.withLock { value } }
        package func set(_ newValue: Value) { lock.withLock { value = newValue } }
        package func update(_ body: (inout Value) -> Void) { lock.withLock { body(&value) } }
    }
#endif
