import Foundation

/// An error a user can act on, with the exit status the CLI reports for it (sysexits, docs/exit-statuses.md §1)
/// and the reason an app switches on (docs/swift-library.md, "Errors").
///
/// `description` (and `LocalizedError.errorDescription`) reads `<what>, <where>`; `hint` (and
/// `recoverySuggestion`) says what to do, when that helps. An app decides by ``reason``, never by the
/// message's text:
///
/// ```swift
/// catch let error as CatalogError {
///     switch error.reason {
///     case .pageOutOfRange, .notFeatured: reloadPages()
///     case .busy, .offline: retryLater()
///     case .closed: return
///     default: show(error.localizedDescription)
///     }
/// }
/// ```
public struct CatalogError: Error, Sendable, CustomStringConvertible, Equatable, LocalizedError {
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
        /// 77: not trusted or not permitted: a source that must be signed by a trusted key is unsigned,
        /// wrongly signed or signed by another key (docs/trust.md); a hub role lacking a GRANT (SQLSTATE
        /// 42501, docs/hub.md §4); a serve that refuses the token (401, 403; docs/protocol.md §9).
        case untrusted = 77
    }

    /// What went wrong, finer than ``Kind``: the value an app switches on.
    ///
    /// An open set (a new reason is not a breaking change), so a `switch` over it ends in `default`. Each
    /// ``Kind`` has a general reason of its own (``usage``, ``invalidData``, …), which an error gets when
    /// nothing more precise is known; the others name one situation each.
    public struct Reason: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The reason's name (`pageOutOfRange`), stable across versions.
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// A page outside `0..<pageCount` (also: any page when no landmark is featured).
        ///
        /// Kind 64.
        public static let pageOutOfRange = Reason(rawValue: "pageOutOfRange")
        /// A landmark that is not featured, so it is on no page.
        ///
        /// Kind 64.
        public static let notFeatured = Reason(rawValue: "notFeatured")
        /// A user id that is empty, blank, over 256 bytes, or holds a control character or U+FFFD
        /// (docs/cli.md §4).
        ///
        /// Kind 64.
        public static let invalidUser = Reason(rawValue: "invalidUser")
        /// The ``Catalog`` was closed (``Catalog/close()``): open a new one.
        ///
        /// Kind 64.
        public static let closed = Reason(rawValue: "closed")
        /// Another connection held the database's write lock for longer than the busy timeout (5 s);
        /// retrying later helps.
        ///
        /// Kind 75.
        public static let busy = Reason(rawValue: "busy")
        /// Another sync runs on this database (its sync lock is held); retrying later helps.
        ///
        /// Kind 75.
        public static let syncInProgress = Reason(rawValue: "syncInProgress")
        /// The server or source could not be reached (no network, refused, timed out); the write stays
        /// local and goes later.
        ///
        /// Kind 69.
        public static let offline = Reason(rawValue: "offline")
        /// The server refused the credentials (HTTP 401, docs/protocol.md §2), also after the token was
        /// asked for again.
        ///
        /// Kind 69.
        public static let unauthorized = Reason(rawValue: "unauthorized")
        /// The server refused the request for this user (HTTP 403, docs/protocol.md §1).
        ///
        /// Kind 69.
        public static let forbidden = Reason(rawValue: "forbidden")
        /// The server answered that the token's account was erased (HTTP 401 `account_erased`,
        /// docs/protocol.md §2): not retried, and a sync session clears this device's copy of the user.
        ///
        /// Kind 69.
        public static let accountErased = Reason(rawValue: "accountErased")
        /// The server quarantined this device's position: its stamp is further ahead of the server's clock
        /// than the server allows (docs/merge-rules.md §5), so the device's clock (or a stamp it took on)
        /// is ahead.
        ///
        /// Stays in the sync status until a push is applied again. Kind 65.
        public static let clockAhead = Reason(rawValue: "clockAhead")
        /// The database file is not there (a read-only ``Catalog``, or it was removed).
        ///
        /// Kind 66.
        public static let databaseMissing = Reason(rawValue: "databaseMissing")

        /// Kind 64, nothing more precise known.
        public static let usage = Reason(rawValue: "usage")
        /// Kind 65: malformed or invalid input data.
        public static let invalidData = Reason(rawValue: "invalidData")
        /// Kind 66: an input file missing or unreadable.
        public static let missingInput = Reason(rawValue: "missingInput")
        /// Kind 69: a source unavailable (404, 5xx after retries).
        public static let unavailable = Reason(rawValue: "unavailable")
        /// Kind 70: a bug in LandmarkCatalog.
        public static let internalError = Reason(rawValue: "internalError")
        /// Kind 73: the database or an output cannot be created or written.
        public static let cannotWrite = Reason(rawValue: "cannotWrite")
        /// Kind 74: an I/O error (disk full).
        public static let ioError = Reason(rawValue: "ioError")
        /// Kind 75: a temporary failure other than ``busy`` and ``syncInProgress``.
        public static let temporaryFailure = Reason(rawValue: "temporaryFailure")
        /// Kind 76: an incompatible snapshot or log format or version.
        public static let incompatible = Reason(rawValue: "incompatible")
        /// Kind 77: a source that must be signed is not signed by a trusted key.
        public static let untrusted = Reason(rawValue: "untrusted")

        /// The general reason of `kind`.
        public static func general(_ kind: Kind) -> Reason {
            switch kind {
            case .usage: .usage
            case .dataInvalid: .invalidData
            case .noInput: .missingInput
            case .unavailable: .unavailable
            case .software: .internalError
            case .cantCreate: .cannotWrite
            case .ioError: .ioError
            case .tempFail: .temporaryFailure
            case .incompatible: .incompatible
            case .untrusted: .untrusted
            }
        }
    }

    /// The category, which decides the exit status.
    public var kind: Kind
    /// What went wrong, for an app to switch on.
    public var reason: Reason
    /// What went wrong and where (file, line:column or index, id, field).
    public var message: String
    /// What the user can do about it.
    public var hint: String?
    /// For an HTTP source that answered with an error status: that status (404 lets a log reader take a
    /// fresh look at its manifest).
    public var httpStatus: Int?
    /// Whether another connection's lock on the database outlived the busy timeout (SQLite's
    /// `SQLITE_BUSY` / `SQLITE_LOCKED`): 75, and a sync stops trying the sources left.
    ///
    /// The same as `reason == .busy`.
    public var databaseBusy: Bool {
        get { reason == .busy }
        set { reason = newValue ? .busy : (reason == .busy ? .general(kind) : reason) }
    }

    /// - Parameters:
    ///   - kind: the category (the CLI's exit status).
    ///   - message: what went wrong, and where.
    ///   - hint: what to do about it.
    ///   - reason: what an app switches on; nil: the general reason of `kind`.
    public init(_ kind: Kind, _ message: String, hint: String? = nil, reason: Reason? = nil) {
        self.kind = kind
        self.message = message
        self.hint = hint
        self.reason = reason ?? .general(kind)
    }

    /// The process exit status for this error.
    public var exitStatus: Int32 { kind.rawValue }

    public var description: String { message }

    /// The message (`LocalizedError`): what `localizedDescription` shows.
    public var errorDescription: String? { message }
    /// The hint (`LocalizedError`).
    public var recoverySuggestion: String? { hint }
}
