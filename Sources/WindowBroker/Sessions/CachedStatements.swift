import GRDB

extension Database {
    /// Runs one statement of the hot paths (an open's insert, a report's commit, a save, an
    /// index entry) through the connection's statement cache: `execute(sql:)` prepares its
    /// SQL anew each time, and SQLite's parser and planner were a visible share of every
    /// commit's CPU.
    func executeCached(sql: String, arguments: StatementArguments) throws {
        try cachedStatement(sql: sql).execute(arguments: arguments)
    }
}
