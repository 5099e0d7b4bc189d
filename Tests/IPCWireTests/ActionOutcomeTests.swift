import IPCWire
import XCTest

final class ActionOutcomeTests: XCTestCase {
    func testOutcomesRoundTripThroughTheWire() throws {
        for outcome: ActionOutcome in [.performed(nil), .performed(.dictionary(["text": .string("milk")])), .declined("no such note")] {
            XCTAssertEqual(try ActionOutcome(wire: outcome.wire), outcome)
        }
    }

    func testAValueThatIsNotAPropertyListIsRefused() {
        var wire = ActionOutcome.performed(.string("x")).wire
        wire.value = .init()  // a value of no kind
        XCTAssertThrowsError(try ActionOutcome(wire: wire)) { error in
            XCTAssertEqual((error as? BrokerError)?.code, .invalidUserInfo, "\(error)")
        }
    }
}
