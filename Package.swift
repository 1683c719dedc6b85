// swift-tools-version:6.1
import PackageDescription

let strict: [SwiftSetting] = [.swiftLanguageMode(.v6)]

let package = Package(
    name: "Tidemark",
    platforms: [.macOS(.v13), .iOS(.v16)],
    products: [
        .library(name: "Tidemark", targets: ["Tidemark"]),
        .executable(name: "sync", targets: ["sync"]),
        .executable(name: "tidemark-bench", targets: ["TidemarkBench"]),
        .executable(name: "tidemark-vectors", targets: ["VectorGenerator"]),
        .executable(name: "tidemark-sim", targets: ["Simulation"]),
        .executable(name: "tidemark-crash", targets: ["CrashHarness"]),
        .executable(name: "tidemark-fuzz", targets: ["BundleFuzzer"]),
        .executable(name: "tidemark-example-grdb", targets: ["GRDBAppExample"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        // HTTP for WebDAV exchanges: streams bodies and takes extra trust roots (`--ca-file`) on Linux too.
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.100.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.30.0"),
        // `swift package generate-documentation --target Tidemark`; a plugin, built only when run.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // zlib, for raw DEFLATE compression of bundle chunks.
        .systemLibrary(name: "CZlib", path: "Sources/CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        // SQLite's C API, for the statements the store runs per change (Sources/Tidemark/Store/SQLite).
        .systemLibrary(
            name: "CSQLite", path: "Sources/CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        // Pure values and rules: no file or database I/O.
        .target(
            name: "TidemarkCore",
            dependencies: ["CZlib", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: strict),
        // The history-tracked store, capture, history API, exchange.
        .target(
            name: "Tidemark",
            dependencies: [
                "TidemarkCore", "CSQLite", .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: strict),
        // The `sync` subcommands, as a library so tests and the executable share them.
        .target(
            name: "SyncCommands",
            dependencies: ["Tidemark", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            swiftSettings: strict),
        .executableTarget(name: "sync", dependencies: ["SyncCommands"], swiftSettings: strict),
        // The SQLite session extension, the baseline of the bundle benchmarks (tools/ only).
        .systemLibrary(
            name: "CSQLiteSession", path: "tools/CSQLiteSession", pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]),
        .executableTarget(
            name: "TidemarkBench",
            dependencies: [
                "Tidemark", "TidemarkTestSupport", "CSQLiteSession", "CZlib",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "tools/TidemarkBench",
            swiftSettings: strict),
        // Writes Protocol/vectors/ (keys, valid and invalid bundles, manifest.json).
        .executableTarget(
            name: "VectorGenerator",
            dependencies: ["TidemarkCore", .product(name: "Crypto", package: "swift-crypto")],
            path: "tools/VectorGenerator",
            swiftSettings: strict),
        // The merge rules as a pure function of a set of transactions, and the random workload that
        // convergence tests and the simulation check against them.
        .target(
            name: "ReferenceModel", dependencies: ["TidemarkCore"], path: "tools/ReferenceModel", swiftSettings: strict),
        // Many replicas, many random writes, random gossip: time and rounds to converge.
        .executableTarget(
            name: "Simulation",
            dependencies: [
                "Tidemark", "ReferenceModel", "TidemarkTestSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "tools/Simulation",
            swiftSettings: strict),
        // libFuzzer target over the bundle decoder and verifier; `tools/fuzz.sh` builds and runs it.
        .executableTarget(
            name: "BundleFuzzer", dependencies: ["TidemarkCore", .product(name: "Crypto", package: "swift-crypto")],
            path: "tools/BundleFuzzer", swiftSettings: strict),
        // SIGKILLs `sync` commands at random moments, checks stores and the exchange folder after
        // each kill, and that the replicas still converge.
        .executableTarget(
            name: "CrashHarness",
            dependencies: [
                "Tidemark", "TidemarkTestSupport", .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "tools/CrashHarness",
            swiftSettings: strict),
        // The README's "Using Tidemark in a GRDB app", compiled and run by AppStoreCommandTests.
        .executableTarget(
            name: "GRDBAppExample", dependencies: ["Tidemark", .product(name: "GRDB", package: "GRDB.swift")],
            path: "Examples/GRDBApp",
            swiftSettings: strict),
        .target(
            name: "TidemarkTestSupport",
            dependencies: [
                "Tidemark", .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Tests/TidemarkTestSupport",
            swiftSettings: strict),
        .testTarget(
            name: "TidemarkCoreTests",
            dependencies: ["TidemarkCore", "TidemarkTestSupport", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: strict),
        .testTarget(
            name: "TidemarkTests",
            dependencies: [
                "Tidemark", "TidemarkTestSupport", "ReferenceModel", .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: strict),
        .testTarget(
            name: "SyncCLITests",
            dependencies: [
                "TidemarkTestSupport", "sync", "SyncCommands", "CrashHarness", "GRDBAppExample",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict),
    ]
)
