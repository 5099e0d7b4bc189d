@testable import IPCWire
import XCTest

/// The two bits of Foundation's text handling the clients replaced so that they link
/// FoundationEssentials only (no ICU): `printf` formatting and trimming spaces.
final class TextFormattingTests: XCTestCase {
    func testPrintfFormatsNumbersAsTheCLibraryDoes() {
        XCTAssertEqual(String(printf: "%.1f MiB", 12.25), "12.2 MiB")  // round-half-even, as printf
        XCTAssertEqual(String(printf: "%.1f s", 0.05), "0.1 s")
        XCTAssertEqual(String(printf: "%02d:%02d", 5, 30), "05:30")
        XCTAssertEqual(String(printf: "%02x", UInt8(0xab)), "ab")
        XCTAssertEqual(String(printf: ".%03d", 7), ".007")
        XCTAssertEqual(String(printf: "psi some %.1f%% full %.1f%%", 1.0, 2.5), "psi some 1.0% full 2.5%")
        // Longer than the first buffer.
        XCTAssertEqual(String(printf: "%0300d", 1).count, 300)
    }

    func testTrimmingSpacesTakesSpacesAndTabsOffBothEndsOnly() {
        XCTAssertEqual("  ctrl + n\t".trimmingSpaces, "ctrl + n")
        XCTAssertEqual(" \t ".trimmingSpaces, "")
        XCTAssertEqual("".trimmingSpaces, "")
        XCTAssertEqual("a".trimmingSpaces, "a")
        XCTAssertEqual("\nx\n".trimmingSpaces, "\nx\n", "newlines are not spaces here")
    }
}
