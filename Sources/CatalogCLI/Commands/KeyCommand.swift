import Foundation
import LandmarkCatalog
import LandmarkCatalogSync

extension CatalogCLI {
    enum TrustOptionsTable {
        static let sign = Option<String>(
            "--sign", "FILE",
            "Sign the manifest with this secret key (manifest.json.minisig, minisign's format; the file must not be readable by others).",
            completion: .file, parse: Values.nonEmpty)
        static let trust = Option<String>(
            "--trust", "KEY",
            "Take only snapshot logs signed by this minisign public key (its base64 line or a .pub file); repeatable (key rotation).",
            repeatable: true, completion: .file, parse: Values.nonEmpty)
        static let allow = Option<String>(
            "--allow", "KIND",
            "The rows this remote may write: landmarks, positions or all (default all); others are counted and not applied.",
            completion: .words(WriteGrant.allCases.map(\.rawValue)), parse: Values.oneOf(WriteGrant.allCases.map(\.rawValue)))
    }

    enum KeyOptions {
        static let output = Options.output.with(help: "The secret key file to write (FILE.pub gets the public key).").mandatory
    }

    static var keyCommand: CommandSpec {
        CommandSpec(
            name: "key",
            abstract: "Make the Ed25519 key pair that signs snapshot logs (minisign's format).",
            subcommands: [
                CommandSpec(
                    name: "generate",
                    abstract: "Write a new secret key to FILE (mode 0600) and its public key to FILE.pub, and print the public key.",
                    discussion: """
                        Both files are in minisign's format: 'minisign -Vm manifest.json -P KEY' verifies what
                        'publish --sign FILE' signs, and a key made by 'minisign -G -W' signs for catalog too. The secret
                        key is not encrypted: keep it on the publishing machine only, readable by its user alone
                        (catalog refuses one that others may read). Peers trust the public key with
                        'remote add NAME URL --trust KEY'. An existing FILE is never replaced.
                        """,
                    options: [KeyOptions.output.spec],
                    run: runKeyGenerate)
            ])
    }

    static func runKeyGenerate(_ i: Invocation) throws -> Int32 {
        let output = i[KeyOptions.output]
        guard output != "-" else {
            throw UsageError(message: "key generate writes the secret key to a file (--output FILE), never to standard output", path: i.parsed.path)
        }
        let publicPath = output + ".pub"
        for path in [output, publicPath] where FileManager.default.fileExists(atPath: path) {
            throw CatalogError(
                .cantCreate, "\(path) exists; refusing to replace a key", hint: "choose another --output, or remove the old key pair first")
        }
        let key = MinisignSecretKey.generate()
        let secret = try AtomicFileWriter(path: output, mode: 0o600)
        try secret.write(Array(key.fileText.utf8))
        try secret.commit()
        let pub = try AtomicFileWriter(path: publicPath, mode: 0o644)
        try pub.write(Array(key.publicKey.fileText.utf8))
        try pub.commit()
        i.stdout.write(Array(key.publicKey.fileText.utf8))
        return 0
    }

    /// `--sign FILE` loaded before anything is written: a key that is missing, open to others or not a
    /// key fails the command at once.
    static func signingKey(_ i: Invocation) throws -> MinisignSecretKey? {
        try i[TrustOptionsTable.sign].map { try MinisignSecretKey.load(path: $0) }
    }

    /// Every `--trust KEY`, read (a base64 line or a .pub file).
    static func trustedKeys(_ i: Invocation) throws -> [MinisignPublicKey] {
        try i.parsed.all(TrustOptionsTable.trust).map { try MinisignPublicKey.resolve($0) }
    }
}
