/// Where `catalog import` reads from.
public enum ImportSource: Sendable, Equatable {
    /// A file path.
    case file(String)
    /// Standard input (`-`).
    case standardInput
    /// An open file descriptor (not closed by the import), with the name to use in messages.
    case descriptor(Int32, name: String)

    /// The name used in messages: the path, or `<stdin>`.
    public var displayName: String {
        switch self {
        case .file(let path): return path
        case .standardInput: return "<stdin>"
        case .descriptor(_, let name): return name
        }
    }
}

/// How an import behaves (docs/cli.md §2).
public struct ImportOptions: Sendable {
    /// Every warning (trailing comma, `isFavourite`, legacy shape, unknown key) becomes an error.
    public var strict = false
    /// Live landmarks missing from the file become tombstones.
    public var prune = false
    /// Validate and count, then roll back: nothing is written.
    public var dryRun = false
    /// At most this many errors are reported before the import stops looking for more.
    public var maxErrors = 20

    public init(strict: Bool = false, prune: Bool = false, dryRun: Bool = false) {
        self.strict = strict
        self.prune = prune
        self.dryRun = dryRun
    }
}

/// What an import did (or, with `dryRun`, would do).
public struct ImportSummary: Sendable, Equatable {
    /// Records read from the file.
    public var records = 0
    /// New ids (or ids that were tombstones).
    public var inserted = 0
    /// Existing rows whose content changed.
    public var updated = 0
    /// Existing rows left as they were (not rewritten).
    public var unchanged = 0
    /// Rows tombstoned by `--prune`.
    public var pruned = 0
    /// Warnings reported.
    public var warnings = 0
    /// True when nothing was written because of `dryRun`.
    public var dryRun = false

    public init() {}
}
