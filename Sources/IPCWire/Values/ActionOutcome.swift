/// What an action or a command came to.
public enum ActionOutcome: Sendable, Equatable {
    /// Done, with an optional value for the caller.
    case performed(PlistValue?)
    /// Not done, and why (the caller sees the reason).
    case declined(String)

    /// The outcome the wire carries; a value that is not a property list is refused.
    package init(wire: Windowbroker_V1_ActionResult) throws(BrokerError) {
        if wire.performed {
            self = .performed(wire.hasValue ? try PlistValue(wire: wire.value, path: "value") : nil)
        } else {
            self = .declined(wire.declineReason)
        }
    }

    /// The outcome as the wire carries it.
    package var wire: Windowbroker_V1_ActionResult {
        .with {
            switch self {
            case .performed(let value):
                $0.performed = true
                if let value { $0.value = value.wire }
            case .declined(let reason):
                $0.declineReason = reason
            }
        }
    }
}
