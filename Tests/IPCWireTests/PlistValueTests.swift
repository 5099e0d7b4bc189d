import Foundation
import IPCWire
import XCTest

final class PlistValueTests: XCTestCase {
    func testEveryPlistKindRoundTripsThroughTheWire() throws {
        let value: PlistValue = .dictionary([
            "s": .string("text"), "i": .integer(-42), "r": .real(2.5), "b": .bool(true),
            "d": .data(Data([0, 1, 2])), "t": .date(Date(timeIntervalSince1970: 1_700_000_000)),
            "u": .url("https://example.org/x"), "l": .list([.integer(1), .null]),
            "m": .dictionary(["nested": .string("yes")]), "n": .null,
        ])
        XCTAssertEqual(try PlistValue(wire: value.wire), value)
    }

    func testADictionaryIsWrittenInKeyOrderWhateverItsOwnOrder() throws {
        var grown: [String: PlistValue] = [:]
        for key in (0..<40).map({ "k\($0)" }).shuffled() { grown[key] = .string(key) }
        let other = Dictionary(uniqueKeysWithValues: grown.reversed())
        let wire = PlistValue.wire(dictionary: grown)
        XCTAssertEqual(wire.entries.map(\.key), grown.keys.sorted())
        XCTAssertEqual(try wire.serializedBytes() as [UInt8], try PlistValue.wire(dictionary: other).serializedBytes() as [UInt8])
    }

    /// The entries are read as a protobuf map is: a key that comes twice, the last counts.
    func testAKeyThatComesTwiceKeepsItsLastValue() throws {
        var wire = Windowbroker_V1_PlistDictionary()
        wire.entries = [("a", 1), ("b", 2), ("a", 3)].map { (key: String, value: Int64) in .with { $0.key = key; $0.value = PlistValue.integer(value).wire } }
        XCTAssertEqual(try PlistValue.dictionary(wire: wire), ["a": .integer(3), "b": .integer(2)])
    }

    func testAValueWithoutAKindIsNotAPropertyList() {
        var wire = Windowbroker_V1_PlistDictionary()
        wire.entries.append(.with { $0.key = "bad" })
        XCTAssertThrowsError(try PlistValue.dictionary(wire: wire)) { error in
            XCTAssertEqual((error as? BrokerError)?.code, .invalidUserInfo)
            XCTAssertTrue((error as? BrokerError)?.message.contains("userInfo.bad") == true)
        }
    }

    /// The error names where the bad value sits, through lists and dictionaries (the path is
    /// only written out for an error).
    func testARefusalNamesThePathToTheBadValue() {
        var badURL = Windowbroker_V1_PlistValue()
        badURL.urlValue = ""
        var inner = PlistValue.wire(dictionary: ["fine": .integer(1)])
        inner.entries.append(.with { $0.key = "link"; $0.value = badURL })
        let list = Windowbroker_V1_PlistValue.with { $0.listValue = .with { $0.items = [PlistValue.null.wire, .with { $0.dictionaryValue = inner }] } }
        var payload = Windowbroker_V1_PlistDictionary()
        payload.entries.append(.with { $0.key = "items"; $0.value = list })
        XCTAssertThrowsError(try PlistValue.dictionary(wire: payload, path: "payload")) { error in
            XCTAssertEqual((error as? BrokerError)?.code, .invalidUserInfo)
            XCTAssertEqual((error as? BrokerError)?.message, "payload.items[1].link is not a valid URL: ")
        }
        var date = Windowbroker_V1_PlistValue()
        date.dateValue = .infinity
        XCTAssertThrowsError(try PlistValue(wire: .with { $0.listValue = .with { $0.items = [date] } }, path: "value")) { error in
            XCTAssertEqual((error as? BrokerError)?.message, "value[0] is a date that is not a finite time")
        }
    }

    func testNestingDeeperThanTheLimitIsRefused() {
        var value = PlistValue.string("leaf")
        for _ in 0...WireProtocol.maxUserInfoDepth + 1 { value = .list([value]) }
        XCTAssertThrowsError(try PlistValue(wire: value.wire)) { error in
            XCTAssertEqual((error as? BrokerError)?.code, .invalidUserInfo)
        }
        var shallow = PlistValue.string("leaf")
        for _ in 0..<WireProtocol.maxUserInfoDepth { shallow = .list([shallow]) }
        XCTAssertNoThrow(try PlistValue(wire: shallow.wire))
    }

    func testJSONInputMapsTypesAndTaggedKinds() throws {
        let parsed = try PlistValue.parse(json: #"{"a": 1, "b": 1.5, "c": true, "d": null, "e": [1, "x"], "f": {"$date": "2026-11-21T10:00:00Z"}, "g": {"$data": "AAE="}, "h": {"$url": "file:///tmp"}}"#)
        XCTAssertEqual(parsed["a"], .integer(1))
        XCTAssertEqual(parsed["b"], .real(1.5))
        XCTAssertEqual(parsed["c"], .bool(true))
        XCTAssertEqual(parsed["d"], .null)
        XCTAssertEqual(parsed["e"], .list([.integer(1), .string("x")]))
        XCTAssertEqual(parsed["f"], .date(ISO8601DateFormatter().date(from: "2026-11-21T10:00:00Z")!))
        XCTAssertEqual(parsed["g"], .data(Data([0, 1])))
        XCTAssertEqual(parsed["h"], .url("file:///tmp"))
        XCTAssertThrowsError(try PlistValue.parse(json: "{not json"))
    }

    func testActivityValidationChecksTypeAndSize() {
        var wire = UserActivity(activityType: "notes.edit", userInfo: ["text": .string(String(repeating: "x", count: 2000))]).wire
        XCTAssertThrowsError(try UserActivity(wire: wire, maxBytes: 1000)) { error in
            XCTAssertEqual((error as? BrokerError)?.code, .payloadTooLarge)
        }
        XCTAssertNoThrow(try UserActivity(wire: wire, maxBytes: 4000))
        wire.activityType = ""
        XCTAssertThrowsError(try UserActivity(wire: wire, maxBytes: 4000)) { error in
            XCTAssertEqual((error as? BrokerError)?.code, .invalidRequest)
        }
    }

    func testRestorationActivitySurvivesItsAtRestEncoding() throws {
        let activity = UserActivity(
            activityType: "notes.edit", title: "T", targetContentIdentifier: "n1",
            userInfo: ["text": .string("hello")], keywords: ["k"], isEligibleForSearch: true,
            interactionState: Data("{\"cursor\":3}".utf8), persistentIdentifier: "p")
        XCTAssertEqual(try UserActivity(serialized: activity.serialized()), activity)
    }
}
