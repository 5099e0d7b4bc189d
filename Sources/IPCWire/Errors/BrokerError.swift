/// The error every windowbroker peer can receive: a stable code scripts can switch on and a
/// message a person can act on. It travels as the schema's `Error` message.
public struct BrokerError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The stable error codes, as the wire and `wmctl --json` name them.
    public enum Code: String, Sendable, CaseIterable {
        /// A frame did not decode as an `Envelope`.
        case malformedFrame
        /// A frame, activity, payload or value is over its limit.
        case payloadTooLarge
        /// A peer sent something before its Hello, or no Hello in time.
        case handshakeRequired
        /// The peers speak different protocol versions.
        case unsupportedVersion
        /// The peer may not do this: another user, or a scene asking about another app.
        case permissionDenied
        /// No app with that id is installed.
        case unknownApp
        /// An activity type the app's manifest does not declare.
        case undeclaredActivityType
        /// A `userInfo` that is not a property list, or nested too deeply.
        case invalidUserInfo
        /// No session with that id, nor a unique prefix of one.
        case unknownSession
        /// The session was closed; it cannot come back.
        case sessionDiscarded
        /// The session is not in a state that allows this.
        case invalidState
        /// The app supports one scene and already has it.
        case multipleScenesUnsupported
        /// The broker refused a scene's request (e.g. from a scene in the background).
        case requestDenied
        /// Too many scenes, clients or queued requests, or not enough memory.
        case resourceExhausted
        /// The scene's process failed to start, crashed or answered with an error.
        case workerFailed
        /// The peer did not answer before the deadline.
        case timedOut
        /// The request is malformed or contradicts itself.
        case invalidRequest
        /// The session has no running scene to take this.
        case sessionNotConnected
        /// The disk holding the broker's store is full: nothing was committed.
        case storageFull
        /// The app's scenes crashed too often lately; retry after `retryAfterSeconds`.
        case crashLoop
        /// The connection closed before the answer came.
        case connectionClosed
        /// Nothing listens at the control socket.
        case brokerUnreachable
        /// A fault in the broker; its log says more.
        case internalError
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
        switch self {
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
    public init(wire: Windowbroker_V1_Error) {
        self.init(Code(wire: wire.code), wire.message, retryAfterSeconds: wire.retryAfterSeconds > 0 ? wire.retryAfterSeconds : nil)
    }

    /// The error as an `Error` frame carries it.
    public var wire: Windowbroker_V1_Error {
        .with {
            $0.code = code.wire
            $0.message = message
            if let retryAfterSeconds { $0.retryAfterSeconds = retryAfterSeconds }
        }
    }
}
