import Foundation
import LandmarkCatalog

extension Follower {
    /// Reads the `--sign` key file again (SIGHUP, docs/live-sync.md §5), so a key replaced in the file
    /// signs the next publish.
    ///
    /// A file that cannot be read now (gone, open to others, not a key) is a warning (kind `reload`):
    /// the key read before goes on signing. The key's bytes never reach the message.
    func reloadSigningKey() {
        guard let file = options.signingKeyFile else { return }
        do {
            let key = try MinisignSecretKey.load(path: file)
            guard key.publicKey != options.sync.publish.signingKey?.publicKey else { return }
            // Replacing the file and reloading is the rotation: the manifest the old key signed is taken
            // over, where another signer's is refused (docs/trust.md §2).
            options.sync.publish.previousKey = options.sync.publish.signingKey?.publicKey
            options.sync.publish.signingKey = key
            context.options.publish = options.sync.publish
        } catch {
            let failure = SourceSync.failure(error, source: file, path: path)
            let current = options.sync.publish.signingKey.map { "key \($0.publicKey.id)" } ?? "the key read before"
            diagnostics(
                Diagnostic(
                    severity: .warning,
                    message: "the signing key was not read again: \(failure.message); \(current) goes on signing",
                    file: file, kind: "reload"))
        }
    }
}
