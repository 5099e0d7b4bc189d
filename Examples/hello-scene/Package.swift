// swift-tools-version: 6.0
// A scene app in a package of its own: what `Examples/hello-scene` shows a developer to copy.
// It depends on windowbroker's SceneWorker library; from another checkout, use
//     .package(url: "https://github.com/OWNER/windowbroker.git", from: "0.1.0")
// instead of the path (a released tag), and the same product.
import PackageDescription

let package = Package(
    name: "hello-scene",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(name: "windowbroker", path: "../.."),
    ],
    targets: [
        .executableTarget(
            name: "hello-scene",
            dependencies: [.product(name: "SceneWorker", package: "windowbroker")]
        ),
    ]
)
