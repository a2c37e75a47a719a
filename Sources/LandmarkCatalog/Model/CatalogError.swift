/// An error a user can act on, with the exit status the CLI reports for it (sysexits, docs/exit-statuses.md §1).
///
/// `description` reads `<what>, <where>`; `hint` says what to do, when that helps.
public struct CatalogError: Error, Sendable, CustomStringConvertible, Equatable {
    /// Categories of failure and their exit statuses (`<sysexits.h>`).
    public enum Kind: Int32, Sendable {
        /// 64: the command line is wrong (also: a page out of range, a landmark that is not featured).
        case usage = 64
        /// 65: the input data is malformed or invalid.
        case dataInvalid = 65
        /// 66: an input file is missing or unreadable.
        case noInput = 66
        /// 69: a sync source is unavailable (network, 404, 5xx after retries).
        case unavailable = 69
        /// 70: an internal error (a bug).
        case software = 70
        /// 73: the database or an output cannot be created or written.
        case cantCreate = 73
        /// 74: an I/O error (disk full).
        case ioError = 74
        /// 75: a temporary failure: lock held or database busy; retry later.
        case tempFail = 75
        /// 76: an incompatible snapshot format or version.
        case incompatible = 76
        /// 77: not trusted: a source that must be signed by a trusted key is unsigned, wrongly signed or
        /// signed by another key (docs/trust.md).
        case untrusted = 77
    }

    /// The category, which decides the exit status.
    public var kind: Kind
    /// What went wrong and where (file, line:column or index, id, field).
    public var message: String
    /// What the user can do about it.
    public var hint: String?
    /// For an HTTP source that answered with an error status: that status (404 lets a log reader take a
    /// fresh look at its manifest).
    public var httpStatus: Int?
    /// Whether another connection's lock on the database outlived the busy timeout (SQLite's
    /// `SQLITE_BUSY` / `SQLITE_LOCKED`): 75, and a sync stops trying the sources left.
    public var databaseBusy = false

    public init(_ kind: Kind, _ message: String, hint: String? = nil) {
        self.kind = kind
        self.message = message
        self.hint = hint
    }

    /// The process exit status for this error.
    public var exitStatus: Int32 { kind.rawValue }

    public var description: String { message }
}

extension CatalogError {
    /// Maps an SQLite error to the exit status a user can act on: busy/locked → 75, full/I/O → 74,
    /// cannot open / read-only / not a database → 73 (naming a read-only mount or a file or directory this
    /// user cannot write, when that is the cause), anything else → 70.
    public init(_ error: SQLiteError, path: String) {
        switch error.code.primary {
        case .busy, .locked:
            self.init(.tempFail, "database is busy (\(error.message)), \(path)", hint: "another process holds a lock; retry later")
            databaseBusy = true
        case .full:
            self.init(.ioError, "disk full while writing the database (\(error.message)), \(path)")
        case .ioError:
            self.init(.ioError, "I/O error on the database (\(error.message)), \(path)")
        case .cantOpen, .readOnly:
            if let problem = CatalogStore.writeAccessProblem(path) {
                self.init(.cantCreate, "cannot open or write the database: \(problem.cause) (\(error.message)), \(path)", hint: problem.hint)
            } else {
                self.init(.cantCreate, "cannot open or write the database: \(error.message), \(path)")
            }
        case .notADatabase, .corrupt:
            self.init(.cantCreate, "cannot open or write the database: \(error.message), \(path)")
        default:
            self.init(.software, "\(error)")
        }
    }
}
