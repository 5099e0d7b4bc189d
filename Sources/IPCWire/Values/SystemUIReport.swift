#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What the system UI process (`windowbroker-ui`) tells the broker that started it, as one
/// JSON line on the descriptor named by `WINDOWBROKER_UI_FD`: where it drew its items once
/// its first frame is on screen, or why it could not show anything. Only the broker reads it.
package struct SystemUIReport: Codable, Sendable, Equatable {
    package struct Item: Codable, Sendable, Equatable {
        /// A session id, "new-window", or a command id.
        package var id: String
        /// Surface pixels; nil when the item is scrolled off.
        package var x, y, width, height: Int?
        package init(id: String, x: Int? = nil, y: Int? = nil, width: Int? = nil, height: Int? = nil) {
            self.id = id
            self.x = x
            self.y = y
            self.width = width
            self.height = height
        }
    }

    package var error: String?
    package var width = 0
    package var height = 0
    package var items: [Item] = []

    package init(error: String? = nil, width: Int = 0, height: Int = 0, items: [Item] = []) {
        self.error = error
        self.width = width
        self.height = height
        self.items = items
    }

    /// The environment variable naming the descriptor the report is written to.
    package static let descriptorVariable = "WINDOWBROKER_UI_FD"
    /// The item id of the switcher's card that opens a new window.
    package static let newWindowItem = "new-window"
}
