import Foundation
import LandmarkCatalog

extension CatalogCLI {
    /// `completions`' argument: the parser checks the shell (a usage error with a suggestion otherwise).
    enum ToolingArguments {
        static let shell = Argument<String>(
            "shell", "bash, zsh or fish.", completion: .words(Completions.shells), parse: Values.oneOf(Completions.shells, unknown: "shell"))
    }

    static var completionsCommand: CommandSpec {
        CommandSpec(
            name: "completions",
            abstract: "Print the shell completion script for bash, zsh or fish, generated from this command table.",
            discussion: """
                Completes commands, subcommands, options (short ones too) and their values: files, directories,
                --log-format's words, shells, and the saved remotes (read with 'catalog remote list' when you press
                Tab). scripts/install puts the scripts in PREFIX/share/bash-completion/completions/catalog,
                PREFIX/share/zsh/site-functions/_catalog and PREFIX/share/fish/vendor_completions.d/catalog.fish.
                For one session: source <(catalog completions bash), or catalog completions fish | source.
                """,
            arguments: [ToolingArguments.shell.spec],
            run: { i in
                i.stdout.write(Completions.script(for: i[ToolingArguments.shell], root: rootCommand, version: version))
                return 0
            })
    }

    static var manCommand: CommandSpec {
        CommandSpec(
            name: "man",
            abstract: "Print the manual page catalog(1) in roff, generated from this command table.",
            discussion: """
                Read it with: catalog man | man -l -  (scripts/install puts it in PREFIX/share/man/man1/catalog.1).
                The page is dated SOURCE_DATE_EPOCH when that is set, else today (UTC).
                """,
            run: { i in
                let date = Manual.date(environment: i.context.environment, nowMilliseconds: i.context.wallClock.nowMilliseconds())
                i.stdout.write(Manual.render(root: rootCommand, version: version, date: date, exitStatus: exitStatusHelp))
                return 0
            })
    }
}
