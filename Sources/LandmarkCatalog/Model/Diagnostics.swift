import Foundation

/// How far a long job (an import, a sync, an export, a publish) has come, for a progress line on a terminal.
///
/// Not named `Progress`: that is Foundation's `Progress`, which every app file importing both would have
/// to spell `Foundation.Progress`.
public struct CatalogProgress: Sendable, Equatable {
    /// Records (or rows) done so far.
    public var records: Int
    /// Input bytes consumed so far.
    public var bytes: Int64
    /// The input's size in bytes when known (a regular file), for a percentage and an ETA.
    public var totalBytes: Int64?
    /// Which job is running: a sync reports merging, then writing (`--publish`).
    public var phase: Phase = .importing
    /// What is read or written: a sync source (without its password) or the published path; nil for an import.
    public var subject: String?

    /// A job that reports progress.
    public enum Phase: Sendable, Equatable {
        /// `import`: records read from the input file (`bytes` of `totalBytes` read).
        case importing
        /// `sync`: rows of one source's snapshot merged (`bytes` of `totalBytes` of the file being read).
        case merging
        /// `export`, `publish`, `sync --publish`: rows written (`bytes` written; the total is not known).
        case writing
        /// `sync` with a PostgreSQL hub: rows of this node's changes sent to the hub (`bytes` sent; the
        /// total is not known). The hub then writes them in one statement, which reports nothing.
        case pushing
    }

    public init(records: Int, bytes: Int64, totalBytes: Int64?, phase: Phase = .importing, subject: String? = nil) {
        self.records = records
        self.bytes = bytes
        self.totalBytes = totalBytes
        self.phase = phase
        self.subject = subject
    }
}

/// A problem found in input data or met while syncing, with where it is: file, line:column, record
/// index, id and field, and a `kind` that groups diagnostics of one sort (for bounded reporting and
/// `--log-format json`).
public struct Diagnostic: Sendable, Equatable, CustomStringConvertible {
    /// A warning is accepted (unless `--strict`); an error fails the import or the source.
    public enum Severity: String, Sendable { case warning, error }
    public var severity: Severity
    /// What is wrong.
    public var message: String
    /// The file name (a path, or `<stdin>`), or the source.
    public var file: String
    /// Line and column, when known.
    public var position: SourcePosition?
    /// The record's 0-based index in its array, when known.
    public var index: Int?
    /// The record's id, when known.
    public var id: Int64?
    /// The field, in dotted form (`coordinates.latitude`), when known.
    public var field: String?
    /// The sort of diagnostic: `invalid` (bad data), `unknown-key`, `quirk`, `quarantined`, `tie`,
    /// `retry`, … Diagnostics of one kind are reported at most 20 times per run (docs/operations.md §5).
    public var kind: String
    /// Structured fields for machine-readable logs (`user`, `stamp`, …), in order.
    public var details: [Detail]

    /// One structured field.
    public struct Detail: Sendable, Equatable {
        public var key: String
        public var value: String
        public init(_ key: String, _ value: String) {
            self.key = key
            self.value = value
        }
    }

    public init(
        severity: Severity, message: String, file: String, position: SourcePosition? = nil, index: Int? = nil,
        id: Int64? = nil, field: String? = nil, kind: String? = nil, details: [Detail] = []
    ) {
        self.severity = severity
        self.message = message
        self.file = file
        self.position = position
        self.index = index
        self.id = id
        self.field = field
        self.kind = kind ?? (severity == .error ? "invalid" : "warning")
        self.details = details
    }

    /// `file:line:column` (or what is known of it).
    public var location: String {
        var location = file
        if let position { location += ":\(position.line):\(position.column)" }
        return location
    }

    /// The diagnostic on one line: `<what>, <file>:<line>:<column>, record <index> (id <id>), field <field>`.
    public var description: String {
        var parts = [message]
        if !location.isEmpty { parts.append(location) }  // a warning about no file has no location
        if let index {
            parts.append("record \(index)" + (id.map { " (id \($0))" } ?? ""))
        } else if let id {
            parts.append("id \(id)")
        }
        if let field { parts.append("field \(field)") }
        return parts.joined(separator: ", ")
    }
}
