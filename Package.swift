// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "windowbroker",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "windowbrokerd", targets: ["windowbrokerd"]),
        .executable(name: "wmctl", targets: ["wmctl"]),
        .executable(name: "notes", targets: ["notes"]),
        .executable(name: "windowbroker-ui", targets: ["windowbroker-ui"]),
        // The system UI's drawing (wayland, cairo, pango), loaded when it first draws:
        // installed beside windowbroker-ui (CSceneWindowLoader says why).
        .library(name: "windowbroker-drawing", type: .dynamic, targets: ["CSceneWindow"]),
        .library(name: "SceneWorker", targets: ["SceneWorker"]),
        .library(name: "IPCWire", targets: ["IPCWire"]),
        .library(name: "SceneWorkerTesting", targets: ["SceneWorkerTesting"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.0"),
        // No default traits: BinaryDelimitedStreams imports all of Foundation (and ICU) into
        // every binary for stream APIs nothing here uses.
        .package(url: "https://github.com/apple/swift-protobuf.git", from: "1.39.0", traits: []),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.0"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-system.git", from: "1.8.0"),
        // `make docs`: the SDK reference, rendered by DocC.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CSystemd",
            pkgConfig: "libsystemd",
            providers: [.apt(["libsystemd-dev"])]
        ),
        // The broker's D-Bus face over sd-bus (vtables are C macros); libsystemd as above.
        .target(
            name: "CSessionBus",
            linkerSettings: [.linkedLibrary("systemd")]
        ),
        .target(
            name: "CLinuxShim",
            cSettings: [.define("_GNU_SOURCE")]
        ),
        .target(name: "CEpoll"),
        .target(
            name: "IPCWire",
            dependencies: [
                "CLinuxShim",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ]
        ),
        .target(
            name: "WindowBroker",
            dependencies: [
                "IPCWire",
                "CLinuxShim",
                "CEpoll",
                "CSystemd",
                "CSessionBus",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        .executableTarget(
            name: "windowbrokerd",
            dependencies: [
                "WindowBroker",
                "IPCWire",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // A scene's window: libwayland-client, cairo and pango (system libraries).
        .systemLibrary(
            name: "CWaylandCairo",
            pkgConfig: "pangocairo",
            providers: [.apt(["libwayland-dev", "libxkbcommon-dev", "libpango1.0-dev", "libcairo2-dev"])]
        ),
        // The drawing library (the product windowbroker-drawing); no program links it.
        .target(
            name: "CSceneWindow",
            dependencies: ["CWaylandCairo"],
            exclude: ["protocol"],
            cSettings: [.headerSearchPath("../CSceneWindowLoader/include")],
            linkerSettings: ["wayland-client", "xkbcommon", "pangocairo-1.0", "pango-1.0", "gobject-2.0", "glib-2.0", "cairo"].map { .linkedLibrary($0) }
        ),
        // What the programs link instead: the API of the drawing library, loaded on first use.
        .target(name: "CSceneWindowLoader", linkerSettings: [.linkedLibrary("dl"), .linkedLibrary("pthread")]),
        .target(name: "SystemUISurface", dependencies: ["CSceneWindowLoader", "IPCWire"]),
        // GTK 4: every scene's window (apps call its C API directly; CGtk adds the few GLib
        // macros Swift cannot import).
        .systemLibrary(
            name: "CGtk",
            pkgConfig: "gtk4",
            providers: [.apt(["libgtk-4-dev"])]
        ),
        // A scene's window asks for the keyboard when the broker makes it the key scene.
        .target(name: "CSceneActivation", linkerSettings: [.linkedLibrary("wayland-client")]),
        // A scene app's process as its own zygote: forks the app's workers for the broker.
        .target(name: "CSceneZygote", linkerSettings: [.linkedLibrary("dl")]),
        .target(
            name: "SceneWorker",
            dependencies: [
                "IPCWire",
                "CLinuxShim",
                "CSceneZygote",
                "CGtk",
                "CSceneActivation",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // The broker in the test process against fake workers on socket pairs (tests only).
        .target(
            name: "WindowBrokerTesting",
            dependencies: [
                "WindowBroker",
                "IPCWire",
                "CLinuxShim",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The reference app: the app itself (NotesApp) and its executable.
        // Drives a scene through the SDK's runtime with no broker (the SDK's test kit).
        .target(
            name: "SceneWorkerTesting",
            dependencies: [
                "SceneWorker", "IPCWire", "CLinuxShim",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .target(name: "NotesApp", dependencies: ["SceneWorker", "CGtk"]),
        .executableTarget(name: "notes", dependencies: ["NotesApp", "SceneWorker"]),
        // The tests' app: notes inside a probe that adds the test-only actions; not installed.
        .executableTarget(name: "scene-probe", dependencies: ["NotesApp", "SceneWorker", "IPCWire"], exclude: ["actions.json"]),
        // The system UI the broker starts on the compositor: the switcher, the command overlay.
        .executableTarget(
            name: "windowbroker-ui",
            dependencies: [
                "CLinuxShim", "IPCWire", "SystemUISurface",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // The README's SDK sample, built with everything else so it keeps compiling.
        .executableTarget(name: "minimal-app", dependencies: ["SceneWorker"], path: "Examples/minimal-app"),
        // The fuzz target (make fuzz builds it with -sanitize=fuzzer; built normally it replays inputs).
        .executableTarget(
            name: "wire-fuzz",
            dependencies: [
                "IPCWire", "WindowBroker",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ]
        ),
        // make load: many control clients at once against a running broker.
        .executableTarget(name: "wb-load", dependencies: ["IPCWire"]),
        // The window tests' pointer (a virtual pointer on the headless compositor); not installed.
        .executableTarget(
            name: "wb-pointer",
            exclude: ["protocol"],
            linkerSettings: [.linkedLibrary("wayland-client")]
        ),
        // The benchmark's spawn baseline (see scripts/bench.sh); not installed.
        .executableTarget(name: "spawn-probe"),
        // The benchmark's floor for our stack: the same exchanges over NIO and swift-protobuf
        // with nothing of ours but the schema (see scripts/bench.sh); not installed.
        .executableTarget(
            name: "stack-floor",
            dependencies: [
                "IPCWire", "CLinuxShim",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ]
        ),
        .executableTarget(
            name: "wmctl",
            dependencies: [
                "IPCWire",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            // A position-dependent executable: a command's whole life is its start, and as a
            // PIE the loader first patched 70,000 pointers, copying 180 pages (`perf` page
            // faults), 0.7 ms of `wmctl status`. The price is a fixed address for wmctl's own
            // code (libraries, stack and heap stay randomised); it is a short-lived client of
            // the user's own broker. The broker and the apps stay PIE (README, "A command's start").
            linkerSettings: [.unsafeFlags(["-Xlinker", "-no-pie"], .when(configuration: .release))]
        ),
        .testTarget(
            name: "SceneWorkerTests",
            dependencies: [
                "SceneWorkerTesting", "SceneWorker",
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .testTarget(name: "IPCWireTests", dependencies: ["IPCWire", .product(name: "NIOEmbedded", package: "swift-nio")]),
        .testTarget(
            name: "WindowBrokerTests",
            dependencies: [
                "WindowBroker", "WindowBrokerTesting", "IPCWire", "CLinuxShim",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            // Read at run time from the source tree (HumanOutputTests), not a resource.
            exclude: ["Snapshots"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
