import Foundation
import XCTest

/// What a binary links decides how big it is and how fast it starts (issue 23): all of
/// Foundation brings ICU (about 30 MB of data and code) into a statically linked binary.
final class FootprintTests: XCTestCase {
    /// wmctl, the reference app and the SDK under it need FoundationEssentials only. Checked
    /// on the build's own (dynamically linked) binaries: a module that imports all of
    /// Foundation, or a dependency trait that does, shows up here as libFoundation.so.
    func testWmctlAndTheReferenceAppLinkFoundationEssentialsButNotFoundationNorICU() throws {
        try checkLinksEssentialsOnly("wmctl")
        try checkLinksEssentialsOnly("notes")
    }

    private func checkLinksEssentialsOnly(_ binary: String) throws {
        let result = try runToCompletion("/usr/bin/ldd", [BrokerHarness.binDirectory + "/" + binary])
        XCTAssertEqual(result.code, 0, result.output)
        let libraries = result.output.split(separator: "\n").compactMap { $0.split(whereSeparator: { $0 == " " || $0 == "\t" }).first.map(String.init) }
        XCTAssertTrue(libraries.contains("libFoundationEssentials.so"), result.output)
        for heavy in ["libFoundation.so", "libFoundationInternationalization.so", "lib_FoundationICU.so"] {
            XCTAssertFalse(libraries.contains(heavy), "\(binary) links \(heavy):\n\(result.output)")
        }
    }
}

/// The system UI's drawing library (wayland, cairo and pango under it) is the system UI's alone:
/// the broker and wmctl link no display library at all, and a scene, which draws with GTK,
/// never loads it, with a display or without.
final class DrawingLibraryTests: BrokerTestCase {
    static let displayLibraries = ["libwindowbroker-drawing.so", "libgtk-4.so", "libcairo.so", "libpango-1.0.so", "libwayland-client.so"]

    func testTheBrokerAndWmctlLinkNoDisplayLibrary() throws {
        for binary in ["wmctl", "windowbrokerd"] {
            let result = try runToCompletion("/usr/bin/ldd", [BrokerHarness.binDirectory + "/" + binary])
            XCTAssertEqual(result.code, 0, result.output)
            for library in Self.displayLibraries {
                XCTAssertFalse(result.output.contains(library), "\(binary) links \(library):\n\(result.output)")
            }
        }
    }

    func testAHeadlessSceneNeverLoadsTheSystemUIsDrawing() throws {
        let note = try harness.openNote("headless", title: "Headless")
        _ = try harness.json("send", note, "type", "--arg", "text=no window")
        let pid = try XCTUnwrap(harness.session(note)["pid"] as? Int)
        let maps = try mappedFiles(of: pid)
        XCTAssertTrue(maps.contains("libc.so"), "the maps were read")
        XCTAssertFalse(maps.contains("libwindowbroker-drawing.so"), "a scene loaded the system UI's drawing library")
    }
}
