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

/// The drawing libraries (wayland, cairo, pango and the 40 libraries under them) are loaded by
/// a scene that draws, not by every process that links the SDK (issue 23: a headless scene
/// started 3.5 ms sooner and keeps 0.6 MiB less private memory without them).
final class DrawingLibraryTests: BrokerTestCase {
    static let drawingLibraries = ["libwindowbroker-drawing.so", "libcairo.so", "libpango-1.0.so", "libwayland-client.so"]

    func testTheProgramsDoNotLinkTheDrawingLibraries() throws {
        for binary in ["notes", "wmctl", "windowbrokerd"] {
            let result = try runToCompletion("/usr/bin/ldd", [BrokerHarness.binDirectory + "/" + binary])
            XCTAssertEqual(result.code, 0, result.output)
            for library in Self.drawingLibraries {
                XCTAssertFalse(result.output.contains(library), "\(binary) links \(library):\n\(result.output)")
            }
        }
    }

    func testAHeadlessSceneNeverLoadsThem() throws {
        let note = try harness.openNote("headless", title: "Headless")
        _ = try harness.json("send", note, "type", "--arg", "text=no window")
        let pid = try XCTUnwrap(harness.session(note)["pid"] as? Int)
        let maps = try mappedFiles(of: pid)
        XCTAssertTrue(maps.contains("libc.so"), "the maps were read")
        for library in Self.drawingLibraries {
            XCTAssertFalse(maps.contains(library), "a scene without a display loaded \(library)")
        }
    }
}
