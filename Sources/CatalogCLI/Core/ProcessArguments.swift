import Foundation

/// The process's command line, program name first.
///
/// `CommandLine.arguments`, or — on Linux, when the Swift runtime captured none — the kernel's copy in
/// `/proc/self/cmdline`: a library preloaded with `LD_PRELOAD` (libfaketime, which operators and the
/// collection tests use to move the clock, docs/erasure.md §4) can keep the runtime from seeing argv, and
/// the command would run as if given nothing.
public func processArguments() -> [String] {
    #if os(Linux)
        if CommandLine.arguments.count <= 1, let handle = FileHandle(forReadingAtPath: "/proc/self/cmdline"),
            let data = try? handle.readToEnd()
        {
            var parts = data.split(separator: 0, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
            if parts.last == "" { parts.removeLast() }
            if parts.count > CommandLine.arguments.count { return parts }
        }
    #endif
    return CommandLine.arguments
}
