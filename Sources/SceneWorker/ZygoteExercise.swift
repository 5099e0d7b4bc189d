#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import IPCWire
import NIOCore
import NIOEmbedded

/// What an app's zygote runs once before it forks its first scene: the SDK's share of an open
/// (`PrewarmExercise`), and the wire's own paths on a channel that exists only in memory
/// (`EmbeddedChannel`): the framing and the envelope codec added to a pipeline, a request
/// numbered, written and answered, a command read and handed over, an acknowledgement written.
///
/// Why: a forked scene inherits the runtime's caches as they were at the fork, so each type
/// built and each conformance found here is built and found once per app instead of once per
/// scene. In a `perf` profile of 20 forked scenes before this ran in the zygote, half of a
/// scene's time from its fork to its answer went to building type metadata from mangled
/// names and scanning conformance records, most of it on NIO's and the wire's paths.
///
/// What may run here is narrow: the zygote must stay one thread with no Dispatch queue used,
/// no task started or resumed and no descriptor opened that a child would share (the zygote
/// refuses to fork with a second thread). Everything below is synchronous and touches memory
/// only; the sockets, event loops and Dispatch's main queue are made in each child.
@MainActor
enum ZygoteExercise {
    static func run() {
        PrewarmExercise.run()
        exerciseWire()
    }

    private static func exerciseWire() {
        let channel = EmbeddedChannel()
        defer { _ = try? channel.finish(acceptAlreadyClosed: true) }
        guard let wire = try? WireChannel.wrapping(channel) else { return }
        // The connection writes requests and replies straight into the pipeline; the writer is
        // the async one, which this exercise never uses.
        let connection = WireConnection(wire, outbound: NIOAsyncChannelOutboundWriter<Envelope>.makeTestingWriter().0)
        connection.deliverOnLoop { _ in }
        let hello = connection.issue(
            .hello(.current(.worker, clientName: "zygote", sessionID: "")), timeout: .seconds(30), what: "the exercise")
        guard let request = readFrame(channel), request.id != 0 else { return }
        var welcome = Envelope()
        welcome.replyTo = request.id
        welcome.body = .welcome(.init())
        writeFrame(welcome, into: channel)
        hello.whenComplete { _ in }
        // A connect command and an update delivery read as the scene reads them, each answered.
        var command = Envelope()
        command.id = 7
        command.workerCommand = .with {
            $0.update = .with {
                $0.sequence = 1
                $0.event = .with {
                    $0.name = "zygote"
                    $0.payload = PlistValue.wire(dictionary: ["text": .string("zygote"), "n": .integer(1)])
                }
            }
        }
        writeFrame(command, into: channel)
        connection.replyInBackground(to: command, with: .workerMessage(.with { $0.kind = .ack(.init()) }))
        _ = readFrame(channel)
    }

    /// One frame the pipeline wrote, decoded.
    private static func readFrame(_ channel: EmbeddedChannel) -> Envelope? {
        guard var frame = try? channel.readOutbound(as: ByteBuffer.self),
              let length = frame.readInteger(endianness: .big, as: UInt32.self),
              let bytes = frame.readBytes(length: Int(length))
        else { return nil }
        return try? Envelope(serializedBytes: bytes)
    }

    /// `envelope` framed as a peer sends it, read by the pipeline.
    private static func writeFrame(_ envelope: Envelope, into channel: EmbeddedChannel) {
        guard let bytes = try? envelope.serializedBytes() as [UInt8] else { return }
        var frame = channel.allocator.buffer(capacity: 4 + bytes.count)
        frame.writeInteger(UInt32(bytes.count), endianness: .big)
        frame.writeBytes(bytes)
        _ = try? channel.writeInbound(frame)
    }
}
