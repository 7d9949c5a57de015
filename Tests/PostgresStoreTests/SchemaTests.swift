import Testing
@testable import PostgresStore
