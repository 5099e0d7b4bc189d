#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A typed, serialisable description of content (`NSUserActivity`): what a scene shows, what
/// an activation asks for, and what a scene hands over to be restored later.
public struct UserActivity: Sendable, Hashable, Codable {
    /// One of the types the app's manifest declares (`notes.edit`).
    public var activityType: String
    /// What the user is doing, for the switcher and search results.
    public var title: String
    /// The content it is about; activations are routed to the scene whose activation conditions match it.
    public var targetContentIdentifier: String?
    /// What the scene needs to come back to the same place (a property list).
    public var userInfo: [String: PlistValue]
    /// Extra words search finds the activity by.
    public var keywords: [String]
    /// Whether `wmctl search` may find the session by this activity.
    public var isEligibleForSearch: Bool
    /// Opaque bytes the scene uses to put its interaction state (cursor, scroll) back.
    public var interactionState: Data?
    /// A stable id the app gives the activity, to delete it by later.
    public var persistentIdentifier: String?

    /// An activity; every field but the type is optional.
    public init(
        activityType: String,
        title: String = "",
        targetContentIdentifier: String? = nil,
        userInfo: [String: PlistValue] = [:],
        keywords: [String] = [],
        isEligibleForSearch: Bool = false,
        interactionState: Data? = nil,
        persistentIdentifier: String? = nil
    ) {
        self.activityType = activityType
        self.title = title
        self.targetContentIdentifier = targetContentIdentifier
        self.userInfo = userInfo
        self.keywords = keywords
        self.isEligibleForSearch = isEligibleForSearch
        self.interactionState = interactionState
        self.persistentIdentifier = persistentIdentifier
    }
}

extension UserActivity {
    /// Converts from the wire and checks what every receiver must check: a type, plist-typed
    /// `userInfo` within the depth limit, and an encoded size within `maxBytes`.
    package init(wire: Windowbroker_V1_UserActivity, maxBytes: Int = WireProtocol.defaultMaxActivityBytes) throws(BrokerError) {
        guard !wire.activityType.isEmpty else {
            throw BrokerError(.invalidRequest, "the activity has no activityType")
        }
        // Measured by encoding it (swift-protobuf has no public size), so only against a limit:
        // a scene takes every activity it is handed, and a stored one is read back, unlimited.
        if maxBytes < Int.max {
            let size = (try? wire.serializedBytes() as [UInt8])?.count ?? Int.max
            guard size <= maxBytes else {
                throw BrokerError(.payloadTooLarge, "the activity is \(size) bytes encoded; the limit is \(maxBytes)")
            }
        }
        self.init(
            activityType: wire.activityType,
            title: wire.title,
            targetContentIdentifier: wire.targetContentIdentifier.isEmpty ? nil : wire.targetContentIdentifier,
            userInfo: try PlistValue.dictionary(wire: wire.userInfo),
            keywords: wire.keywords,
            isEligibleForSearch: wire.eligibleForSearch,
            interactionState: wire.interactionState.isEmpty ? nil : wire.interactionState,
            persistentIdentifier: wire.persistentID.isEmpty ? nil : wire.persistentID
        )
    }

    /// The activity as the wire carries it.
    package var wire: Windowbroker_V1_UserActivity {
        .with {
            $0.activityType = activityType
            $0.title = title
            $0.targetContentIdentifier = targetContentIdentifier ?? ""
            $0.userInfo = PlistValue.wire(dictionary: userInfo)
            $0.keywords = keywords
            $0.eligibleForSearch = isEligibleForSearch
            $0.interactionState = interactionState ?? Data()
            $0.persistentID = persistentIdentifier ?? ""
        }
    }

    /// The protobuf encoding, used as the at-rest form of restoration activities.
    public func serialized() -> Data {
        (try? wire.serializedData()) ?? Data()
    }

    /// An activity from its stored protobuf bytes.
    public init(serialized data: Data) throws(BrokerError) {
        let decoded: Windowbroker_V1_UserActivity
        do { decoded = try Windowbroker_V1_UserActivity(serializedBytes: data) } catch {
            throw BrokerError(.internalError, "a stored activity could not be decoded: \(error)")
        }
        try self.init(wire: decoded, maxBytes: Int.max)
    }
}
