import CatalogCLI
import Foundation

signal(SIGPIPE, SIG_IGN)
let status = CatalogCLI.run(
    Array(processArguments().dropFirst()),
    context: CLIContext(
        stdout: FileDescriptorSink(fd: 1), stderr: FileDescriptorSink(fd: 2),
        stderrIsTerminal: isatty(2) == 1))
exit(status)
