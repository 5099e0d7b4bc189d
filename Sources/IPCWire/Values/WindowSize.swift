/// A window's or a surface's size in surface pixels (scale 1): a scene's window (SceneWorker)
/// and the system UI's surfaces share it.
public struct WindowSize: Sendable, Equatable, CustomStringConvertible {
    /// Pixels across.
    public var width: Int
    /// Pixels down.
    public var height: Int

    /// A size of `width` x `height` pixels.
    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    public var description: String { "\(width)x\(height)" }
}
