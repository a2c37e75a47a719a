import Foundation

/// A bounded hand-off of batches from a reading thread to the writing one (at most `capacity` waiting),
/// so memory stays bounded by a few batches whatever the input size, and decoding overlaps writing.
package final class BatchQueue: @unchecked Sendable {
    // Safe: every stored `var` is touched only while `condition` is locked.
    private let condition = NSCondition()
    private var items: [RowBatch] = []
    private var cancelled = false
    private let capacity = 1
    /// Position storage the writer gave back once merged (emptied, its capacity kept), for the reader's
    /// next batch: the same two or three buffers of ~2 MB go round for a whole snapshot, instead of a
    /// new one per batch of rows allocated on the reading thread and freed on the writing one — which
    /// glibc's allocator keeps rather than returns (1M positions: ~13 MB more peak RSS, varying run to run).
    private var spare: [[PositionRecord]] = []

    /// Blocks while full.
    ///
    /// Returns false once the writer gave up (the reader should stop).
    package func put(_ batch: RowBatch) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while items.count >= capacity && !cancelled { condition.wait() }
        guard !cancelled else { return false }
        items.append(batch)
        condition.broadcast()
        return true
    }

    /// Blocks until a batch is there.
    package func take() -> RowBatch {
        condition.lock()
        defer { condition.unlock() }
        while items.isEmpty { condition.wait() }
        let batch = items.removeFirst()
        condition.broadcast()
        return batch
    }

    /// Blocks until a batch is there; nil once the queue is cancelled with none left (for a stage
    /// between the reader and the writer, which must stop when the writer gives up).
    func takeUnlessCancelled() -> RowBatch? {
        condition.lock()
        defer { condition.unlock() }
        while items.isEmpty && !cancelled { condition.wait() }
        guard !items.isEmpty else { return nil }
        let batch = items.removeFirst()
        condition.broadcast()
        return batch
    }

    /// Keeps `batch`'s position storage for ``takeSpare()`` (at most two buffers are kept); the batch's
    /// rows must be done with.
    ///
    /// Called by the writer after merging a batch.
    func recycle(_ batch: RowBatch) {
        guard batch.positions.capacity > 0 else { return }
        var storage = batch.positions
        batch.positions = []
        storage.removeAll(keepingCapacity: true)
        condition.lock()
        defer { condition.unlock() }
        if spare.count < 2 && !cancelled { spare.append(storage) }
    }

    /// An empty position array with room kept from a merged batch, or nil (then the reader reserves one).
    func takeSpare() -> [PositionRecord]? {
        condition.lock()
        defer { condition.unlock() }
        return spare.popLast()
    }

    func cancel() {
        condition.lock()
        cancelled = true
        items.removeAll()
        spare.removeAll()
        condition.broadcast()
        condition.unlock()
    }
}

/// Runs a decoder on its own thread, handing its batches to a ``BatchQueue``; the last batch it puts
/// has `isLast` set.
///
/// The writer calls ``finish()`` on every path: it cancels the queue and waits, so the input (a
/// descriptor) may be closed only after the reader is gone.
package final class ReadingThread: @unchecked Sendable {
    // Safe: `queue` is Sendable itself; `finished` is touched only by the writing thread that owns this
    // object (the reading thread sees only the queue and the semaphore).
    package let queue = BatchQueue()
    private let done = DispatchSemaphore(value: 0)
    private var finished = false
    /// The thread whose batches this one passes on, for a stage (``init(after:_:)``).
    private var upstream: ReadingThread?

    /// Starts `body` on a new thread with 1 MiB of stack; `body` emits batches through the queue's `put`
    /// (which returns false when the writer gave up) and must put one last batch with `isLast` set.
    package init(_ body: @escaping @Sendable (BatchQueue) -> Void) {
        let queue = self.queue
        let done = self.done
        let thread = Thread {
            body(queue)
            done.signal()
        }
        thread.stackSize = 1 << 20
        thread.start()
    }

    /// A stage on its own thread between `upstream` and the writer: `body` is called with each batch
    /// of `upstream`, in order, before it is handed on through ``queue``.
    ///
    /// ``finish()`` stops and waits for both threads.
    package convenience init(after upstream: ReadingThread, _ body: @escaping @Sendable (RowBatch) -> Void) {
        let source = upstream.queue
        self.init { queue in
            while let batch = source.takeUnlessCancelled() {
                body(batch)
                guard queue.put(batch), !batch.isLast else { return }
            }
        }
        self.upstream = upstream
    }

    /// Stops the reader (if still running) and waits for it, and for the thread it reads from.
    package func finish() {
        guard !finished else { return }
        finished = true
        queue.cancel()
        upstream?.finish()
        done.wait()
    }

    deinit { finish() }
}
