import Foundation

extension ReadingThread {
    /// Takes this reader's batches and merges each, up to and including its last: what a feed that
    /// decodes a snapshot on a reading thread does.
    ///
    /// `merged` is called after each batch (for progress).
    /// - Throws: what merging a batch threw (the reader is stopped by the caller's `finish()`), else
    ///   the reader's failure, else the merger's (a row that fails the source), after the last batch.
    func mergeAll(into merger: inout RowMerger, merged: (RowBatch, RowMerger) -> Void = { _, _ in }) throws {
        while true {
            let batch = queue.take()
            try merger.apply(batch)
            merged(batch, merger)
            queue.recycle(batch)
            if batch.isLast {
                if let failure = batch.failure { throw failure }
                if let failure = merger.failure() { throw failure }
                return
            }
        }
    }
}
