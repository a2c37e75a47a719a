// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "LandmarkCatalog",
    products: [
        // The core an app links: model, store, positions, merge, snapshots and logs on local files,
        // observation. SQLite and libcrypto only.
        .library(name: "LandmarkCatalog", targets: ["LandmarkCatalog"]),
        // Adds the HTTP (libcurl) and PostgreSQL hub (libpq) sources; call `NetworkSources.register()`.
        .library(name: "LandmarkCatalogSync", targets: ["LandmarkCatalogSync"]),
        .executable(name: "catalog", targets: ["catalog"]),
        // The app's own sync with a `catalog serve` endpoint over URLSession (docs/protocol.md): the core
        // and Foundation only, no libpq or libcurl of its own.
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
        // OpenSSL's libcrypto (Debian: libssl-dev), for SHA-256.
        .systemLibrary(
            name: "CCrypto",
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
            dependencies: ["CSQLite", "CCrypto"],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")],
            plugins: ["EmbedMigrations"]
        ),
        .target(
            name: "LandmarkCatalogSync",
            dependencies: ["LandmarkCatalog", "CLibPQ", "CCurl"],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")],
            plugins: ["EmbedMigrations"]
        ),
        .target(
            name: "LandmarkCatalogClient",
            dependencies: ["LandmarkCatalog"],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        .target(
            name: "CatalogCLI",
            dependencies: ["LandmarkCatalog", "LandmarkCatalogSync"],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        .executableTarget(name: "catalog", dependencies: ["CatalogCLI"]),
        // The tutorial's PageView on a terminal, on the library alone: `swift run Carousel --db PATH --user ID`.
        .executableTarget(name: "Carousel", dependencies: ["LandmarkCatalog"], path: "Examples/Carousel"),
        // What observe and Catalog cost an app (Benchmarks/run.sh --observe).
        .executableTarget(name: "catalog-app-bench", dependencies: ["LandmarkCatalog"], path: "Benchmarks/AppBench"),
        // `catalog` with the test suite's hooks (never shipped): see Tests/Support/CatalogTestHarness/main.swift.
        .executableTarget(name: "catalog-test-harness", dependencies: ["CatalogCLI"], path: "Tests/Support/CatalogTestHarness"),
        .testTarget(
            name: "LandmarkCatalogTests",
            dependencies: ["LandmarkCatalog", "LandmarkCatalogSync", "CatalogCLI", "LandmarkCatalogClient"]
        ),
        // A small program on the core library alone: what an app links (the tests check with ldd that
        // it needs neither libpq nor libcurl).
        .executableTarget(name: "catalog-featured-example", dependencies: ["LandmarkCatalog"], path: "Examples/FeaturedList"),
    ],
    swiftLanguageModes: [.v6]
)
