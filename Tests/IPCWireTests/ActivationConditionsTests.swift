import Foundation
import IPCWire
import XCTest

final class ActivationConditionsTests: XCTestCase {
    func testConditionsRoundTripThroughTheWireAndTheStoresJSON() throws {
        let conditions = ActivationConditions(canActivate: ["note-*", "inbox"], prefersToActivate: ["note-7"])
        XCTAssertEqual(ActivationConditions(wire: conditions.wire), conditions)
        XCTAssertEqual(try JSONDecoder().decode(ActivationConditions.self, from: JSONEncoder().encode(conditions)), conditions)
        // What sessions stored before the type moved into IPCWire still reads.
        let stored = Data(#"{"canActivate":["*"],"prefersToActivate":["a"]}"#.utf8)
        XCTAssertEqual(try JSONDecoder().decode(ActivationConditions.self, from: stored), ActivationConditions(prefersToActivate: ["a"]))
    }

    func testTheDefaultAcceptsAnyTargetAndPrefersNone() {
        XCTAssertEqual(ActivationConditions.default.canActivate, ["*"])
        XCTAssertEqual(ActivationConditions.default.prefersToActivate, [])
        XCTAssertEqual(ActivationConditions(), .default)
    }
}
