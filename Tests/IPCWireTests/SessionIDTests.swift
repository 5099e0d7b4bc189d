import Foundation
import IPCWire
import XCTest

/// A session id reads and writes its one text form by hand (no `sscanf`): it must agree with
/// Foundation's UUID text in every case it accepts, refuse everything else, and keep the order
/// the text form had.
final class SessionIDTests: XCTestCase {
    func testTheTextFormIsTheLowercaseUUIDAndReadsBack() {
        for _ in 0..<1_000 {
            let id = SessionID()
            XCTAssertEqual(id.description, id.uuid.uuidString.lowercased())
            XCTAssertEqual(SessionID(id.description), id)
            XCTAssertEqual(SessionID(id.uuid.uuidString), id, "uppercase is read too")
            XCTAssertEqual(id.uppercaseText, id.uuid.uuidString, "the store's keys, as they always were")
        }
        let edges = [UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)),
                     UUID(uuid: (255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255))]
        for uuid in edges {
            XCTAssertEqual(SessionID(uuid).description, uuid.uuidString.lowercased())
            XCTAssertEqual(SessionID(uuid.uuidString)?.uuid, uuid)
            XCTAssertEqual(SessionID(uuid).uppercaseText, uuid.uuidString)
        }
    }

    func testMixedCaseReadsAsFoundationReadsIt() {
        let text = "3F2504e0-4F89-11D3-9a0C-0305E82C3301"
        XCTAssertEqual(SessionID(text)?.uuid, UUID(uuidString: text))
        XCTAssertEqual(SessionID(text)?.description, "3f2504e0-4f89-11d3-9a0c-0305e82c3301")
    }

    func testAnythingButTheFormIsRefused() {
        let valid = "3f2504e0-4f89-11d3-9a0c-0305e82c3301"
        XCTAssertNotNil(SessionID(valid))
        let refused = [
            "",
            "a-session",
            String(valid.dropLast()),  // 35 characters
            valid + "0",  // 37
            "{" + valid + "}",
            valid.replacingOccurrences(of: "-", with: ""),  // 32 digits, no hyphens
            "3f2504e0-4f8911d3-9a0c-0305e82c3301-",  // a hyphen moved
            "3f2504e0x4f89x11d3x9a0cx0305e82c3301",  // other separators
            "3f2504e0-4f89-11d3-9a0c-0305e82c330g",  // not hexadecimal
            " 3f2504e0-4f89-11d3-9a0c-0305e82c330",  // sscanf would skip the space
            "+f2504e0-4f89-11d3-9a0c-0305e82c3301",  // sscanf would take the sign
            "3f2504e0-4f89-11d3-9a0c-0305e82c330\u{e9}",  // 36 characters, 37 bytes
        ]
        for text in refused {
            XCTAssertNil(SessionID(text), "'\(text)' is not a session id")
        }
    }

    func testTheOrderIsTheTextFormsOrder() {
        let ids = (0..<300).map { _ in SessionID() }
        XCTAssertEqual(ids.sorted().map(\.description), ids.map(\.description).sorted())
        let id = SessionID()
        XCTAssertFalse(id < id)
    }
}
