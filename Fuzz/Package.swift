// swift-tools-version:6.0
import PackageDescription

// libFuzzer targets for every decoder that faces the network. Built apart from the main package,
// with the fuzzer and AddressSanitizer on every module it uses (scripts/fuzz):
//
//   swift build --package-path Fuzz -c release -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library
//
// One binary, the decoder chosen by LANBRIDGE_FUZZ_TARGET (see Sources/lanbridge-fuzz/Targets.swift).
let package = Package(
    name: "lanbridge-fuzz",
    dependencies: [.package(name: "lanbridge", path: "..")],
    targets: [
        .executableTarget(
            name: "lanbridge-fuzz",
            dependencies: [
                .product(name: "LanbridgeProtocol", package: "lanbridge"),
                .product(name: "LanbridgeCoreWalk", package: "lanbridge"),
            ])
    ]
)
