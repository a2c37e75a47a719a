import Foundation
import LandmarkCatalog

/// `<real path of the database>.serve-cursor`: the database id and the highest change sequence this
/// database's servers handed out in cursors (docs/protocol.md §3, docs/serve.md §4).
///
/// A database restored from a backup keeps its `serve-id` (it is a row of the file) but goes back in its
/// change sequence, so the cursors devices and nodes hold would name sequence numbers that new writes then
/// reuse: rows behind them would never reach those clients. At start serve compares the database's change
/// sequence with this mark; behind it, the database takes a new id, and every cursor handed out before is
/// another database's (answered from the start). The mark is kept beside the database, not in it, so
/// restoring the database file does not restore it.
struct CursorMark: Sendable {
    let path: String

    init(databasePath: String) {
        path = CatalogFiles.besideDatabase(databasePath, suffix: ".serve-cursor")
    }

    /// The highest sequence handed out under database id `id`, or nil (no mark, another id's, unreadable).
    func through(id: String) -> Int64? {
        guard let data = FileManager.default.contents(atPath: path),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            object["id"] as? String == id, let through = object["through"] as? NSNumber
        else { return nil }
        return through.int64Value
    }

    /// Records `through` for `id`, atomically (``AtomicFileWriter``: never half written); a failure is
    /// ignored (the mark only narrows what a restore can hide).
    func write(id: String, through: Int64) {
        guard let file = try? AtomicFileWriter(path: path) else { return }
        try? file.write(Array(#"{"id":"\#(id)","through":\#(through)}"#.utf8) + [0x0A])
        try? file.commit()
    }
}
