import Foundation

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
            if let problem = CatalogFiles.writeAccessProblem(path) {
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
