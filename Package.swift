// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "LandmarkCatalog",
    // CarouselModel is @Observable (Observation: iOS 17, macOS 14). Linux needs no entry.
    platforms: [.iOS(.v17), .macOS(.v14)],
    products: [
        // The core an app links: model, store, positions, merge, snapshots and logs on local files,
        // observation. SQLite only (SHA-256 from CryptoKit; from libcrypto on Linux).
        .library(name: "LandmarkCatalog", targets: ["LandmarkCatalog"]),
        // Adds the HTTP (libcurl) and PostgreSQL hub (libpq) sources, live sync (`sync --follow`) and
        // signed logs (Ed25519 over libcrypto); call `NetworkSources.register()`.
        .library(name: "LandmarkCatalogSync", targets: ["LandmarkCatalogSync"]),
        .executable(name: "catalog", targets: ["catalog"]),
        // The app's own sync with a `catalog serve` endpoint (docs/protocol.md): the core and Foundation,
        // no libpq; URLSession on Apple platforms, libcurl (which FoundationNetworking links) on Linux.
        .library(name: "LandmarkCatalogClient", targets: ["LandmarkCatalogClient"]),
    ],
    targets: [
        // SQLite from the system (Debian: libsqlite3-dev), through pkg-config.
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]
        ),
        // libpq from the system (Debian: libpq-dev), through pkg-config: the PostgreSQL hub's client.
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"]), .brew(["libpq"])]
        ),
        // libcurl from the system (Debian: libcurl4-openssl-dev), for the HTTP client.
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"]), .brew(["curl"])]
        ),
        // OpenSSL's libcrypto (Debian: libssl-dev): the core's SHA-256 on Linux (CryptoKit elsewhere) and
        // the sync library's Ed25519 and BLAKE2b.
        .systemLibrary(
            name: "CCrypto",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"]), .brew(["openssl@3"])]
        ),
        // GNU libmicrohttpd (Debian: libmicrohttpd-dev), the HTTP server under `catalog serve` (docs/serve.md).
        .systemLibrary(
            name: "CMicroHTTPD",
            pkgConfig: "libmicrohttpd",
            providers: [.apt(["libmicrohttpd-dev"]), .brew(["libmicrohttpd"])]
        ),
        // libcrypto's PEM keys and signatures for serve's bearer tokens (JWT: EdDSA, ES256, RS256).
        .systemLibrary(
            name: "COpenSSLKeys",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"]), .brew(["openssl@3"])]
        ),
        // Turns Migrations/*.sql into Swift source at build time, so the binary is self-contained
        // and the .sql files stay the single source.
        .executableTarget(name: "EmbedMigrationsTool"),
        .plugin(
            name: "EmbedMigrations",
            capability: .buildTool(),
            dependencies: ["EmbedMigrationsTool"]
        ),
        .target(
            name: "LandmarkCatalog",
            dependencies: ["CSQLite", .target(name: "CCrypto", condition: .when(platforms: [.linux]))],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")],
            plugins: ["EmbedMigrations"]
        ),
        .target(
            name: "LandmarkCatalogSync",
            dependencies: ["LandmarkCatalog", "CLibPQ", "CCurl", "CCrypto"],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")],
            plugins: ["EmbedMigrations"]
        ),
        // `catalog serve` and its tokens: linked by the command line only, never by an app's products.
        .target(
            name: "LandmarkCatalogServer",
            dependencies: ["LandmarkCatalog", "LandmarkCatalogSync", "CMicroHTTPD", "COpenSSLKeys"],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        // On Linux its requests go over libcurl's multi interface (the library FoundationNetworking
        // already links): FoundationNetworking's URLSession spins a core while a request waits
        // (docs/swift-library.md). URLSession on Apple platforms.
        .target(
            name: "LandmarkCatalogClient",
            dependencies: ["LandmarkCatalog", .target(name: "CCurl", condition: .when(platforms: [.linux]))],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        .target(
            name: "CatalogCLI",
            dependencies: ["LandmarkCatalog", "LandmarkCatalogSync", "LandmarkCatalogServer"],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        .executableTarget(name: "catalog", dependencies: ["CatalogCLI"]),
        // The tutorial's PageView on a terminal: `swift run Carousel --db PATH --user ID`, or with
        // `--server URL --token-file FILE` syncing through `catalog serve` (LandmarkCatalogClient).
        .executableTarget(name: "Carousel", dependencies: ["LandmarkCatalog", "LandmarkCatalogClient"], path: "Examples/Carousel"),
        // What observe and Catalog cost an app (Benchmarks/run.sh --observe).
        .executableTarget(name: "catalog-app-bench", dependencies: ["LandmarkCatalog"], path: "Benchmarks/AppBench"),
        // Two devices' sessions through one serve, and an idle session's cost (Benchmarks/run.sh --serve).
        .executableTarget(
            name: "catalog-device-bench", dependencies: ["LandmarkCatalog", "LandmarkCatalogClient"], path: "Benchmarks/DeviceBench"),
        // `catalog` with the test suite's hooks (never shipped): see Tests/Support/CatalogTestHarness/main.swift.
        .executableTarget(name: "catalog-test-harness", dependencies: ["CatalogCLI"], path: "Tests/Support/CatalogTestHarness"),
        // The tests: one target per library (docs/architecture.md §2), each on the shared support (throwaway
        // PostgreSQL and nginx servers, serve and catalog processes, snapshot builders).
        .target(
            name: "CatalogTestSupport",
            dependencies: ["LandmarkCatalog", "LandmarkCatalogSync", "LandmarkCatalogServer", "CatalogCLI", "LandmarkCatalogClient"],
            path: "Tests/CatalogTestSupport"
        ),
        .testTarget(name: "LandmarkCatalogTests", dependencies: ["CatalogTestSupport", "LandmarkCatalog", "LandmarkCatalogSync", "CatalogCLI"]),
        .testTarget(name: "LandmarkCatalogSyncTests", dependencies: ["CatalogTestSupport", "LandmarkCatalog", "LandmarkCatalogSync", "CatalogCLI"]),
        .testTarget(
            name: "LandmarkCatalogServerTests",
            dependencies: ["CatalogTestSupport", "LandmarkCatalog", "LandmarkCatalogSync", "LandmarkCatalogServer"]
        ),
        .testTarget(name: "LandmarkCatalogClientTests", dependencies: ["CatalogTestSupport", "LandmarkCatalog", "LandmarkCatalogClient"]),
        .testTarget(
            name: "CatalogCLITests",
            dependencies: ["CatalogTestSupport", "LandmarkCatalog", "LandmarkCatalogSync", "LandmarkCatalogServer", "CatalogCLI"]
        ),
        // A small program on the core library alone: what an app links (the tests check with ldd that
        // it needs neither libpq nor libcurl).
        .executableTarget(name: "catalog-featured-example", dependencies: ["LandmarkCatalog"], path: "Examples/FeaturedList"),
    ],
    swiftLanguageModes: [.v6]
)
