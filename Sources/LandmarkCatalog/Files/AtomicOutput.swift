/// Whole-file outputs written atomically, for callers outside the library (the CLI's
/// `status --prometheus --output FILE`, for node_exporter's textfile collector, which must never read a
/// half-written file).
public enum AtomicOutput {
    /// Replaces the file at `path` with `bytes` atomically (a temporary file in the
    /// same directory, whose name does not end in `.prom`, fsync, rename, fsync of the directory).
    ///
    /// A symbolic link is written through; an existing file keeps its mode, a new one gets 0644.
    /// - Throws: `CatalogError` 64 for an empty path; 73 when the path is not a regular file (a device,
    ///   a FIFO, a directory) or the directory cannot be written; 74 on a write error (disk full).
    public static func write(_ bytes: [UInt8], to path: String) throws {
        let writer = try AtomicFileWriter(path: path)
        try writer.write(bytes)
        try writer.commit()
    }
}
