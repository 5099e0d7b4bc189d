import Foundation
import Synchronization
@testable import WindowBroker
import XCTest

/// The store's writer thread: jobs run one at a time in the order handed over, on its own
/// named thread, and the thread ends once the writer is released.
final class StoreWriterTests: XCTestCase {
    func testJobsRunInTheOrderHandedOverOnOneThread() async throws {
        let writer = StoreWriter()
        let log = Mutex<[Int]>([])
        let threads = Mutex<Set<String>>([])
        for index in 0..<1_000 {
            writer.submit {
                log.withLock { $0.append(index) }
                threads.withLock { $0.insert(Self.threadName()) }
            }
        }
        let count = try await writer.perform { log.withLock { $0.count } }
        XCTAssertEqual(count, 1_000, "perform runs after everything handed over before it")
        XCTAssertEqual(log.withLock { $0 }, Array(0..<1_000))
        XCTAssertEqual(threads.withLock { $0 }, ["wb-store-write"])
    }

    func testPerformReturnsAndThrowsWhatTheJobDoes() async throws {
        struct Refused: Error {}
        let writer = StoreWriter()
        let value = try await writer.perform { 42 }
        XCTAssertEqual(value, 42)
        do {
            _ = try await writer.perform { () throws -> Int in throw Refused() }
            XCTFail("the job's error is thrown")
        } catch is Refused {}
    }

    func testTheThreadEndsOnceTheWriterIsReleasedAndItsJobsRan() async throws {
        let ran = Mutex(false)
        let thread: String
        do {
            let writer = StoreWriter()
            // This thread's entry under /proc/self/task, which goes when the thread ends.
            thread = try await writer.perform { try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self") }
            writer.submit {
                Thread.sleep(forTimeInterval: 0.2)
                ran.withLock { $0 = true }
            }
        }
        let task = "/proc/self/task/" + (thread.split(separator: "/").last.map(String.init) ?? "")
        XCTAssertTrue(thread.contains("/task/"), thread)
        let deadline = Date().addingTimeInterval(10)
        while FileManager.default.fileExists(atPath: task), Date() < deadline { try await Task.sleep(for: .milliseconds(20)) }
        XCTAssertFalse(FileManager.default.fileExists(atPath: task), "the released writer's thread ended")
        XCTAssertTrue(ran.withLock { $0 }, "what was handed over before the release still ran")
    }

    private static func threadName() -> String {
        ((try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
