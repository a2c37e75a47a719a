#if os(Linux)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

// JSONPullReader: the buffer (refilling it from the descriptor, making bytes available) and positions
// (line, column and offset of a buffer index; whitespace, which counts the lines).
extension JSONPullReader {
    /// Moves bytes `[keep, end)` to the start of the buffer and reads more after them.
    /// - Returns: `false` when nothing more could be read (end of input or a read error, kept in `readError`).
    @inline(never)
    func fill(keepingFrom keep: Int) -> Bool {
        if atEOF { return false }
        if keep > 0 {
            let kept = end - keep
            if kept > 0 { memmove(storage, storage + keep, kept) }
            base += keep
            pos -= keep
            end = kept
        }
        if end == capacity {
            // One number longer than the buffer: grow, so that it stays contiguous.
            resize(to: capacity * 2)
        } else if capacity > bufferSize && end <= bufferSize / 2 {
            // The long number is behind us: shrink back, so memory stays bounded by the current value.
            resize(to: bufferSize)
        }
        while true {
            let count: Int
            if rangeEnd >= 0 {
                let remaining = rangeEnd - rangeOffset
                count = remaining <= 0 ? 0 : pread(fileDescriptor, storage + end, min(capacity - end, remaining), off_t(rangeOffset))
                if count > 0 { rangeOffset += count }
            } else {
                count = read(fileDescriptor, storage + end, capacity - end)
            }
            if count > 0 {
                onRead?(UnsafeRawBufferPointer(start: storage + end, count: count))
                end += count
                return true
            }
            if count == 0 {
                atEOF = true
                return false
            }
            let code = errno
            if code == EINTR { continue }
            readError = JSONReadError(errno: code, offset: base + end)
            atEOF = true
            return false
        }
    }

    private func resize(to newCapacity: Int) {
        let resized = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        resized.initialize(from: storage, count: end)
        storage.deallocate()
        storage = resized
        capacity = newCapacity
    }

    /// Makes at least `count` bytes available from `pos`, unless the input ends first.
    @inline(__always)
    func ensure(_ count: Int) -> Bool {
        if end - pos >= count { return true }
        return ensureSlow(count)
    }

    @inline(never)
    private func ensureSlow(_ count: Int) -> Bool {
        while end - pos < count {
            if !fill(keepingFrom: pos) { return false }
        }
        return true
    }

    /// The byte `offset` bytes after `pos` (which stays where it is), or -1 past the end of input.
    @inline(__always)
    func byte(ahead offset: Int) -> Int {
        if pos + offset < end { return Int(storage[pos + offset]) }
        return ensure(offset + 1) ? Int(storage[pos + offset]) : -1
    }

    // MARK: - Positions

    /// The position of buffer index `index`; `continuation` must count the continuation bytes before it.
    @inline(__always)
    func position(at index: Int) -> SourcePosition {
        let offset = base + index
        return SourcePosition(
            line: line,
            column: offset - lineStart - (continuation - lineStartContinuation) + 1,
            offset: offset)
    }

    /// Skips whitespace (space, tab, LF, CR), counting lines.
    /// - Returns: The next byte, not consumed, or `nil` at the end of input.
    @inline(__always)
    func peekNonWhitespace() -> UInt8? {
        if pos < end {
            let byte = storage[pos]
            if byte > 0x20 { return byte }
        }
        return skipWhitespace()
    }

    private func skipWhitespace() -> UInt8? {
        var p = pos
        var e = end
        var s = storage
        while true {
            while p < e {
                let byte = s[p]
                if byte == 0x20 {
                    // Indentation comes in runs of spaces: eight at a time, then the rest of the run at once
                    // (in a little-endian word the lowest differing byte is the first one).
                    guard p &+ 8 <= e else {
                        p += 1
                        continue
                    }
                    while p &+ 8 <= e {
                        let other =
                            UInt64(littleEndian: UnsafeRawPointer(s + p).loadUnaligned(as: UInt64.self))
                            ^ 0x2020_2020_2020_2020
                        if other != 0 {
                            p &+= other.trailingZeroBitCount >> 3
                            break
                        }
                        p &+= 8
                    }
                } else if byte == 0x0A {
                    p += 1
                    line += 1
                    lineStart = base + p
                    lineStartContinuation = continuation
                } else if byte == 0x09 || byte == 0x0D {
                    p += 1
                } else {
                    pos = p
                    return byte
                }
            }
            pos = p
            if !fill(keepingFrom: p) { return nil }
            p = pos
            e = end
            s = storage
        }
    }
}
