#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `open(2)`, reachable from types that have an `open` method of their own.
func systemOpen(_ path: String, _ flags: Int32, _ mode: mode_t = 0) -> Int32 {
    open(path, flags, mode)
}

/// `write(2)`, likewise.
func systemWrite(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    write(fd, buffer, count)
}

/// The text of `errno` value `code`.
func errorText(_ code: Int32) -> String { String(cString: strerror(code)) }
