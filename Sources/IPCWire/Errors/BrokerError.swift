/// The error every windowbroker peer can receive: a stable code scripts can switch on and a
/// message a person can act on. It travels as the schema's `Error` message.
public struct BrokerError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The stable error codes, as the wire and `wmctl --json` name them. A struct, not an
    /// enum: a later version may add codes, and a program that switches over them needs a
    /// `default` from the start, so a new code breaks no app.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum Known: String, CaseIterable {
            case malformedFrame
            case payloadTooLarge
            case handshakeRequired
            case unsupportedVersion
            case permissionDenied
            case unknownApp
            case undeclaredActivityType
            case invalidUserInfo
            case unknownSession
            case sessionDiscarded
            case invalidState
            case multipleScenesUnsupported
            case requestDenied
            case resourceExhausted
            case workerFailed
            case timedOut
            case invalidRequest
            case sessionNotConnected
            case storageFull
            case crashLoop
            case connectionClosed
            case brokerUnreachable
            case internalError
        }
        fileprivate let known: Known

        fileprivate init(_ known: Known) {
            self.known = known
        }

        /// The code's name, as the wire and `wmctl --json` spell it (`unknownSession`).
        public var rawValue: String { known.rawValue }
        public var description: String { known.rawValue }

        /// The code of that name; nil for a name this version does not know.
        public init?(rawValue: String) {
            guard let known = Known(rawValue: rawValue) else { return nil }
            self.known = known
        }

        /// Every code this version knows.
        public static var allCases: [BrokerError.Code] { Known.allCases.map { BrokerError.Code($0) } }
    }

    /// What went wrong, for programs.
    public var code: Code
    /// What went wrong and what to do next, for people.
    public var message: String
    /// For `crashLoop`: seconds until a launch is accepted again.
    public var retryAfterSeconds: Double?

    /// An error with a code and a message that says what to do next.
    public init(_ code: Code, _ message: String, retryAfterSeconds: Double? = nil) {
        self.code = code
        self.message = message
        self.retryAfterSeconds = retryAfterSeconds
    }

    public var description: String { message }
}

extension BrokerError.Code {
    /// A frame did not decode as an `Envelope`.
    public static let malformedFrame = BrokerError.Code(.malformedFrame)
    /// A frame, activity, payload or value is over its limit.
    public static let payloadTooLarge = BrokerError.Code(.payloadTooLarge)
    /// A peer sent something before its Hello, or no Hello in time.
    public static let handshakeRequired = BrokerError.Code(.handshakeRequired)
    /// The peers speak different protocol versions.
    public static let unsupportedVersion = BrokerError.Code(.unsupportedVersion)
    /// The peer may not do this: another user, or a scene asking about another app.
    public static let permissionDenied = BrokerError.Code(.permissionDenied)
    /// No app with that id is installed.
    public static let unknownApp = BrokerError.Code(.unknownApp)
    /// An activity type the app's manifest does not declare.
    public static let undeclaredActivityType = BrokerError.Code(.undeclaredActivityType)
    /// A `userInfo` that is not a property list, or nested too deeply.
    public static let invalidUserInfo = BrokerError.Code(.invalidUserInfo)
    /// No session with that id, nor a unique prefix of one.
    public static let unknownSession = BrokerError.Code(.unknownSession)
    /// The session was closed; it cannot come back.
    public static let sessionDiscarded = BrokerError.Code(.sessionDiscarded)
    /// The session is not in a state that allows this.
    public static let invalidState = BrokerError.Code(.invalidState)
    /// The app supports one scene and already has it.
    public static let multipleScenesUnsupported = BrokerError.Code(.multipleScenesUnsupported)
    /// The broker refused a scene's request (e.g. from a scene in the background).
    public static let requestDenied = BrokerError.Code(.requestDenied)
    /// Too many scenes, clients or queued requests, or not enough memory.
    public static let resourceExhausted = BrokerError.Code(.resourceExhausted)
    /// The scene's process failed to start, crashed or answered with an error.
    public static let workerFailed = BrokerError.Code(.workerFailed)
    /// The peer did not answer before the deadline.
    public static let timedOut = BrokerError.Code(.timedOut)
    /// The request is malformed or contradicts itself.
    public static let invalidRequest = BrokerError.Code(.invalidRequest)
    /// The session has no running scene to take this.
    public static let sessionNotConnected = BrokerError.Code(.sessionNotConnected)
    /// The disk holding the broker's store is full: nothing was committed.
    public static let storageFull = BrokerError.Code(.storageFull)
    /// The app's scenes crashed too often lately; retry after `retryAfterSeconds`.
    public static let crashLoop = BrokerError.Code(.crashLoop)
    /// The connection closed before the answer came.
    public static let connectionClosed = BrokerError.Code(.connectionClosed)
    /// Nothing listens at the control socket.
    public static let brokerUnreachable = BrokerError.Code(.brokerUnreachable)
    /// A fault in the broker; its log says more.
    public static let internalError = BrokerError.Code(.internalError)

    init(wire: Windowbroker_V1_ErrorCode) {
        switch wire {
        case .malformedFrame: self = .malformedFrame
        case .payloadTooLarge: self = .payloadTooLarge
        case .handshakeRequired: self = .handshakeRequired
        case .unsupportedVersion: self = .unsupportedVersion
        case .permissionDenied: self = .permissionDenied
        case .unknownApp: self = .unknownApp
        case .undeclaredActivityType: self = .undeclaredActivityType
        case .invalidUserInfo: self = .invalidUserInfo
        case .unknownSession: self = .unknownSession
        case .sessionDiscarded: self = .sessionDiscarded
        case .invalidState: self = .invalidState
        case .multipleScenesUnsupported: self = .multipleScenesUnsupported
        case .requestDenied: self = .requestDenied
        case .resourceExhausted: self = .resourceExhausted
        case .workerFailed: self = .workerFailed
        case .timedOut: self = .timedOut
        case .invalidRequest: self = .invalidRequest
        case .sessionNotConnected: self = .sessionNotConnected
        case .storageFull: self = .storageFull
        case .crashLoop: self = .crashLoop
        case .internal, .unspecified, .UNRECOGNIZED: self = .internalError
        }
    }

    var wire: Windowbroker_V1_ErrorCode {
        switch known {
        case .malformedFrame: .malformedFrame
        case .payloadTooLarge: .payloadTooLarge
        case .handshakeRequired: .handshakeRequired
        case .unsupportedVersion: .unsupportedVersion
        case .permissionDenied: .permissionDenied
        case .unknownApp: .unknownApp
        case .undeclaredActivityType: .undeclaredActivityType
        case .invalidUserInfo: .invalidUserInfo
        case .unknownSession: .unknownSession
        case .sessionDiscarded: .sessionDiscarded
        case .invalidState: .invalidState
        case .multipleScenesUnsupported: .multipleScenesUnsupported
        case .requestDenied: .requestDenied
        case .resourceExhausted: .resourceExhausted
        case .workerFailed: .workerFailed
        case .timedOut: .timedOut
        case .invalidRequest: .invalidRequest
        case .sessionNotConnected: .sessionNotConnected
        case .storageFull: .storageFull
        case .crashLoop: .crashLoop
        case .connectionClosed, .brokerUnreachable, .internalError: .internal
        }
    }
}

extension BrokerError {
    /// The error an `Error` frame carries.
    package init(wire: Windowbroker_V1_Error) {
        self.init(Code(wire: wire.code), wire.message, retryAfterSeconds: wire.retryAfterSeconds > 0 ? wire.retryAfterSeconds : nil)
    }

    /// The error as an `Error` frame carries it.
    package var wire: Windowbroker_V1_Error {
        .with {
            $0.code = code.wire
            $0.message = message
            if let retryAfterSeconds { $0.retryAfterSeconds = retryAfterSeconds }
        }
    }
}
