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
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        // zlib, for raw DEFLATE compression of bundle chunks.
        .systemLibrary(name: "CZlib", path: "Sources/CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        // Pure values and rules: no file or database I/O.
        .target(
            name: "TidemarkCore",
            dependencies: ["CZlib", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: strict),
        // The history-tracked store, capture, history API, exchange.
        .target(
            name: "Tidemark",
            dependencies: [
                "TidemarkCore", .product(name: "GRDB", package: "GRDB.swift"), .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strict),
        // The `sync` subcommands, as a library so tests and the executable share them.
        .target(
            name: "SyncCommands",
            dependencies: ["Tidemark", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            swiftSettings: strict),
        .executableTarget(name: "sync", dependencies: ["SyncCommands"], swiftSettings: strict),
        .executableTarget(
            name: "TidemarkBench",
            dependencies: [
                "Tidemark", .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "tools/TidemarkBench",
            swiftSettings: strict),
        .target(
            name: "TidemarkTestSupport",
            dependencies: ["Tidemark"],
            path: "Tests/TidemarkTestSupport",
            swiftSettings: strict),
        .testTarget(name: "TidemarkCoreTests", dependencies: ["TidemarkCore"], swiftSettings: strict),
        .testTarget(
            name: "TidemarkTests",
            dependencies: ["Tidemark", "TidemarkTestSupport", .product(name: "GRDB", package: "GRDB.swift")],
            swiftSettings: strict),
        .testTarget(
            name: "SyncCLITests",
            dependencies: ["TidemarkTestSupport", "sync"],
            swiftSettings: strict),
    ]
)
