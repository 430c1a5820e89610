// swift-tools-version:6.1
import PackageDescription

// Layers point one way, top to bottom (each module, with what it holds: docs/architecture.md):
//   lanbridge (CLI)  ->  LanbridgeBridge (driver and doors on SwiftNIO)  ->  LanbridgeCore (decisions, no I/O)
//   ->  LanbridgeNet (SwiftNIO), LanbridgeDiscovery (Avahi), LanbridgeStores (files)  ->  LanbridgeState (values)
//   ->  LanbridgeFiles, LanbridgeTransport  ->  LanbridgeProtocol (pure, no I/O)  ->  LanbridgeCrypto (libsodium or swift-crypto, by trait)
// Node apps link LanbridgeNode (Transport, Files, Protocol, Crypto: scripts/check-closures keeps it so).
let package = Package(
    name: "lanbridge",
    platforms: [.macOS(.v14), .iOS(.v17)],
    products: [
        .executable(name: "lanbridge", targets: ["lanbridge"]),
        .executable(name: "lanbridge-bench", targets: ["lanbridge-bench"]),
        .executable(name: "lanbridge-node-sim", targets: ["lanbridge-node-sim"]),
        .executable(name: "lanbridge-gateway-sim", targets: ["lanbridge-gateway-sim"]),
        .library(name: "LanbridgeNode", targets: ["LanbridgeNode"]),
        .library(name: "LanbridgeNodeTesting", targets: ["LanbridgeNodeTesting"]),
        .library(name: "LanbridgeProtocol", targets: ["LanbridgeProtocol"]),
        // For Fuzz/ only: the core's random walk.
        .library(name: "LanbridgeCoreWalk", targets: ["LanbridgeCoreWalk"]),
    ],
    // The crypto backend under LanbridgeCrypto: libsodium for the bridge (the default), or
    // swift-crypto (CryptoKit on Apple platforms) for node apps: `traits: ["SwiftCrypto"]` on the
    // package dependency. scripts/test builds both and runs the Noise vectors on each.
    traits: [
        .trait(name: "Sodium", description: "libsodium (libsodium-dev) for the crypto: the bridge's default"),
        .trait(name: "SwiftCrypto", description: "swift-crypto for the crypto, as node apps on Apple platforms build"),
        .default(enabledTraits: ["Sodium"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        // The SwiftCrypto trait's backend (CryptoKit's API; BoringSSL on Linux).
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
        // TLS for a gateway reached over wss:// (only when the operator allows a remote gateway).
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        // Counters for the monitoring endpoint (`serve --metrics-listen`), exported in Prometheus's format.
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        // `swift package generate-documentation --target LanbridgeNode` (the DocC catalog in Sources/LanbridgeNode).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin.git", from: "1.5.0"),
    ],
    targets: [
        // C libraries from Debian (libsodium-dev, libavahi-client-dev).
        .systemLibrary(
            name: "CSodium",
            pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"]), .brew(["libsodium"])]
        ),
        .systemLibrary(
            name: "CAvahiClient",
            pkgConfig: "avahi-client",
            providers: [.apt(["libavahi-client-dev"])]
        ),

        // glibc's mallopt and malloc_trim: the daemon's allocator policy (LanbridgeBridge's AllocatorPolicy).
        .systemLibrary(name: "CMalloc"),
        .systemLibrary(
            name: "CQRencode",
            pkgConfig: "libqrencode",
            providers: [.apt(["libqrencode-dev"])]
        ),

        .target(
            name: "LanbridgeCrypto",
            dependencies: [
                .target(name: "CSodium", condition: .when(traits: ["Sodium"])),
                .product(name: "Crypto", package: "swift-crypto", condition: .when(traits: ["SwiftCrypto"])),
            ]
        ),
        .target(name: "LanbridgeProtocol", dependencies: ["LanbridgeCrypto"]),
        // Files a node app needs too (state directory, atomic and secret files, identity): portable.
        .target(name: "LanbridgeFiles", dependencies: ["LanbridgeProtocol", "LanbridgeCrypto"]),
        // The state as values (pairing state, access policy, settings, runtime status, audit entries):
        // no file is read or written here, so the core, which depends on it, cannot reach one.
        .target(name: "LanbridgeState", dependencies: ["LanbridgeProtocol", "LanbridgeCrypto"]),
        // The state's files: the pairing store, the audit log, push tokens, OpenClaw identities,
        // runtime.json and config.json as read.
        .target(name: "LanbridgeStores", dependencies: ["LanbridgeState", "LanbridgeFiles", "LanbridgeProtocol", "LanbridgeCrypto"]),
        // The Noise session on a NIO channel, shared by the bridge and node apps: NIOCore only.
        .target(
            name: "LanbridgeTransport",
            dependencies: ["LanbridgeProtocol", .product(name: "NIOCore", package: "swift-nio"), .product(name: "Logging", package: "swift-log")]
        ),
        .target(
            name: "LanbridgeNet",
            dependencies: [
                "LanbridgeCrypto", "LanbridgeProtocol", "LanbridgeTransport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "LanbridgeDiscovery",
            dependencies: ["CAvahiClient", "LanbridgeProtocol", .product(name: "Logging", package: "swift-log")]
        ),
        // The bridge's decisions, sans I/O: events in, actions out (no NIO here, so none can creep in).
        .target(
            name: "LanbridgeCore",
            dependencies: ["LanbridgeState", "LanbridgeProtocol", "LanbridgeCrypto", .product(name: "Logging", package: "swift-log")]
        ),
        // Random event sequences through the core, its invariants checked after each step: run by
        // LanbridgeBridgeTests (seeded) and by Fuzz/ (libFuzzer's bytes choose the events).
        .target(
            name: "LanbridgeCoreWalk",
            dependencies: [
                "LanbridgeCore", "LanbridgeState", "LanbridgeProtocol", "LanbridgeCrypto",
                .product(name: "Logging", package: "swift-log"),
            ], path: "Tests/CoreWalk"),
        .target(
            name: "LanbridgeBridge",
            dependencies: [
                "LanbridgeCore", "LanbridgeNet", "LanbridgeState", "LanbridgeStores", "LanbridgeProtocol", "LanbridgeDiscovery", "CQRencode", "CMalloc",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                // The canvas relay's TLS, and its certificate (made with NIOSSL's BoringSSL:
                // CanvasCertificate and BridgeCA import CNIOBoringSSL, a target of swift-nio-ssl that is not a
                // product, so it cannot be listed here; no other file may import it: scripts/check-closures).
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        // The client library node apps link: only what a phone app can (scripts/check-closures
        // fails if a bridge-only target, NIOSSL, NIOWebSocket or NIOHTTP1 creeps in).
        .target(
            name: "LanbridgeNode",
            dependencies: [
                "LanbridgeTransport", "LanbridgeFiles", "LanbridgeProtocol",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // For apps' own tests: an in-memory bridge behind the NodeTransport seam.
        .target(name: "LanbridgeNodeTesting", dependencies: ["LanbridgeNode", "LanbridgeProtocol", "LanbridgeCrypto"]),
        .executableTarget(
            name: "lanbridge-node-sim",
            dependencies: [
                "LanbridgeNode", "LanbridgeProtocol", "LanbridgeCrypto", "LanbridgeDiscovery", .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "examples/node-sim"
        ),
        .executableTarget(
            name: "lanbridge-gateway-sim",
            dependencies: [
                "LanbridgeNet", "LanbridgeProtocol", .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            path: "examples/gateway"
        ),
        .executableTarget(
            name: "lanbridge",
            dependencies: [
                "LanbridgeBridge",
                "LanbridgeCore",  // the answers' types: the activity feed's records and counts, the asked invokes
                "LanbridgeNode",  // discover browse --domain: the SDK's wide-area browser
                "LanbridgeState", "LanbridgeStores",
                "LanbridgeProtocol",
                "LanbridgeDiscovery",
                "CQRencode",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(
            name: "lanbridge-bench",
            dependencies: [
                "LanbridgeProtocol", "LanbridgeCrypto", "LanbridgeBridge", "LanbridgeNode", "LanbridgeState", "LanbridgeStores", "LanbridgeTransport", "TestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"), .product(name: "NIOWebSocket", package: "swift-nio"),
            ]
        ),

        // Test-only helper process: hammers the pairing store so tests can race and SIGKILL it.
        .executableTarget(
            name: "lanbridge-store-stress",
            dependencies: ["LanbridgeState", "LanbridgeStores"],
            path: "Tests/Tools/store-stress"
        ),
        .target(name: "TestSupport", path: "Tests/TestSupport"),

        .testTarget(
            name: "LanbridgeProtocolTests",
            dependencies: ["LanbridgeProtocol", "LanbridgeCrypto", "TestSupport"],
            resources: [.copy("Resources")]
        ),
        .testTarget(
            name: "LanbridgeStateTests",
            dependencies: ["LanbridgeState", "LanbridgeStores", "TestSupport"]
        ),
        // The core's decisions alone, on a fake clock: no NIO, no files.
        .testTarget(
            name: "LanbridgeCoreTests",
            dependencies: [
                "LanbridgeCore", "LanbridgeCoreWalk", "LanbridgeProtocol", "LanbridgeState", "LanbridgeCrypto", "TestSupport",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "LanbridgeBridgeTests",
            dependencies: [
                "LanbridgeBridge", "LanbridgeCore", "LanbridgeCoreWalk", "LanbridgeProtocol", "LanbridgeState", "LanbridgeStores", "LanbridgeCrypto", "LanbridgeNet", "TestSupport",
                .product(name: "NIOEmbedded", package: "swift-nio"), .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .testTarget(name: "LanbridgeNodeTests", dependencies: ["LanbridgeNode", "LanbridgeNodeTesting", .product(name: "NIOPosix", package: "swift-nio")]),
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "LanbridgeNet", "LanbridgeState", "LanbridgeStores", "LanbridgeNode", "TestSupport",
                "lanbridge", "lanbridge-store-stress", "lanbridge-node-sim", "lanbridge-gateway-sim",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            exclude: ["python"]  // independent peers the tests run as subprocesses
        ),
    ]
)

// scripts/test's SwiftCrypto phase runs only the protocol tests on swift-crypto, and its arm64
// phase only the unit test targets (scripts/arm64/test; IntegrationTests' real processes and timings
// do not belong under qemu): without the other test targets each builds in a fraction of the time
// (the main build keeps them all).
let roots: Set<String>? =
    if Context.environment["LANBRIDGE_PROTOCOL_TESTS_ONLY"] != nil {
        ["LanbridgeProtocolTests", "lanbridge-node-sim"]
    } else if Context.environment["LANBRIDGE_UNIT_TESTS_ONLY"] != nil {
        ["LanbridgeProtocolTests", "LanbridgeStateTests", "LanbridgeCoreTests", "LanbridgeBridgeTests", "LanbridgeNodeTests"]
    } else {
        nil
    }
if let roots {
    // What the roots need, and nothing else: their closure, followed through the targets' own dependencies.
    var keep = roots
    var grew = true
    while grew {
        grew = false
        for target in package.targets where keep.contains(target.name) {
            for dependency in target.dependencies {
                let name: String? =
                    switch dependency {
                    case let .targetItem(name, _), let .byNameItem(name, _): name
                    default: nil
                    }
                if let name, package.targets.contains(where: { $0.name == name }), keep.insert(name).inserted { grew = true }
            }
        }
    }
    package.targets.removeAll { !keep.contains($0.name) }
    package.products.removeAll { product in
        let targets = (product as? Product.Executable)?.targets ?? (product as? Product.Library)?.targets ?? []
        return !targets.allSatisfy(keep.contains)
    }
}
