/// The error every windowbroker peer can receive: a stable code scripts can switch on and a
/// message a person can act on. It travels as the schema's `Error` message.
public struct BrokerError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable, CaseIterable {
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

    public var code: Code
    public var message: String
    /// For `crashLoop`: seconds until a launch is accepted again.
    public var retryAfterSeconds: Double?

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
    public init(wire: Windowbroker_V1_Error) {
        self.init(Code(wire: wire.code), wire.message, retryAfterSeconds: wire.retryAfterSeconds > 0 ? wire.retryAfterSeconds : nil)
    }

    public var wire: Windowbroker_V1_Error {
        .with {
            $0.code = code.wire
            $0.message = message
            if let retryAfterSeconds { $0.retryAfterSeconds = retryAfterSeconds }
        }
    }
}
