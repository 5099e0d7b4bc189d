/// IPCWire: the windowbroker protocol shared by the broker, the SceneWorker SDK and wmctl.
///
/// It holds the framing (4-byte big-endian length + protobuf `Envelope`), the generated schema
/// (`Generated/windowbroker.pb.swift`, from `proto/windowbroker.proto`), the value types both
/// sides speak (`UserActivity`, `PlistValue`, `SceneState`), typed errors, the request/reply
/// correlation every peer uses (`WireConnection`) and a control client (`BrokerClient`).
/// Nothing here knows about sessions or processes: that is the broker's business.

package typealias Envelope = Windowbroker_V1_Envelope

/// The protocol's version and limits, shared by every peer.
public enum WireProtocol {
    /// Bumped on any incompatible change to the schema's meaning. Peers with another version are refused.
    public static let version: UInt32 = 2
    /// The release of windowbroker this code belongs to.
    public static let brokerVersion = "0.1.0"
    /// What `--version` prints: the release and the protocol it speaks.
    public static var versionLine: String { "\(brokerVersion) (protocol \(version))" }
    /// Largest frame accepted on any connection, header excluded.
    public static let defaultMaxFrameBytes = 1 << 20
    /// Largest encoded `UserActivity` accepted from a requester or a scene.
    public static let defaultMaxActivityBytes = 256 << 10
    /// Deepest nesting of lists and dictionaries accepted in `userInfo`.
    public static let maxUserInfoDepth = 32
    /// Largest encoded payload of one update event (like an activity's).
    public static let defaultMaxUpdatePayloadBytes = 256 << 10
    /// All shared defaults of one app together, encoded: a connecting scene gets them in one frame.
    public static let defaultMaxDefaultsBytes = 256 << 10
    /// One scene's storage, encoded: it travels with every connection of the scene.
    public static let defaultMaxSceneStorageBytes = 64 << 10
    /// Longest key of a default or of scene storage, in UTF-8 bytes; an update's name too.
    public static let maxKeyBytes = 256
    /// Every name a lifecycle event (`watch`, the D-Bus `Event` signal) can have.
    package static let eventNames: [String] = [
        "created", "launched", "willConnect", "restoreInteractionState", "willEnterForeground", "didBecomeActive",
        "willResignActive", "didEnterBackground", "didDisconnect", "restorationSaved", "restorationExtended",
        "continue", "didDiscardSceneSessions", "exited", "crashed", "discarded", "didReceiveMemoryWarning",
        "reclaimed", "pressure", "activationRequested", "destructionRequested", "refreshRequested",
        "updatePosted", "defaultsChanged", "updatesDropped", "commandPerformed", "didBecomeKey", "didResignKey",
    ]
}

extension Windowbroker_V1_Hello {
    /// The first frame every peer sends, speaking this build's protocol version.
    public static func current(_ kind: Windowbroker_V1_PeerKind, clientName: String, sessionID: String = "") -> Self {
        .with {
            $0.protocolVersion = WireProtocol.version
            $0.peerKind = kind
            $0.clientName = clientName
            $0.sessionID = sessionID
        }
    }
}

extension Windowbroker_V1_Welcome {
    /// The broker's answer to an accepted Hello; `brokerPID` is the answering process.
    public static func current(brokerPID: Int32) -> Self {
        .with {
            $0.protocolVersion = WireProtocol.version
            $0.brokerVersion = WireProtocol.brokerVersion
            $0.brokerPid = brokerPID
        }
    }
}
