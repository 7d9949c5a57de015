import Foundation
import TestSupport
import Testing

@testable import Platform

@Suite struct ResidentCodeTests {
    static func fixture() throws -> [UInt8] {
        let url = try #require(Bundle.module.url(forResource: "smaps", withExtension: "txt", subdirectory: "Fixtures"))
        return Array(try Data(contentsOf: url))
    }

    @Test func readsEveryMappingWithItsPathAndSizes() throws {
        let mappings = ResidentCode.parse(smaps: try Self.fixture())
        #expect(mappings.count == 13)
        let code = try #require(mappings.first { $0.start == 0x5600_c0a1_0000 })
        #expect(code.end == 0x5600_c0b1_0000)
        #expect(code.permissions == "r-xp")
        #expect(code.path == "/opt/sk/bin/sessionkeeper")
        #expect(code.resident == 512 * 1024)
        #expect(code.anonymous == 0)
        #expect(code.flags == ["rd", "ex", "mr", "mw", "me", "sd"])
        // A path with spaces, as the kernel writes it.
        #expect(mappings.contains { $0.path == "/home/me/my lib (old).so (deleted)" })
        #expect(mappings.first { $0.path == "[heap]" }?.anonymous == 2048 * 1024)
    }

    @Test func onlyUnwrittenReadOnlyPagesOfLoadedProgramsAndLibrariesAreReleased() throws {
        let releasable = ResidentCode.releasable(ResidentCode.parse(smaps: try Self.fixture()))
        #expect(releasable.map(\.start) == [
            0x5600_c0a0_0000,  // the program's read-only data
            0x5600_c0a1_0000,  // its code
            0x7f00_0010_0000,  // a library's code
            0x7f00_0030_0000,  // a library replaced on disk since it was loaded (its old file is still mapped)
            0x7f00_0041_0000,  // code of a library whose read-only mapping lacks an Anonymous: line
        ])
        // Not released: read-only data written before it was sealed (RELRO), writable data, a mapping with nothing
        // resident, the heap, a data file (not a program or library), locked pages, a mapping whose private copies
        // are unknown, the kernel's vDSO.
    }

    @Test func emptyOrGarbledTextGivesNothingToRelease() {
        #expect(ResidentCode.parse(smaps: []).isEmpty)
        let garbled = Array("not smaps\nRss: 12 kB\n0-0 r-xp\nzz-10 r-xp 0 0:0 1 /x\n".utf8)
        #expect(ResidentCode.releasable(ResidentCode.parse(smaps: garbled)).isEmpty)
    }

    /// Real mappings of a real file, then a real release: the unwritten read-only copies of a file mapped executable
    /// leave memory and read back the same; a page written before its mapping was sealed, and a data file, stay.
    @Test func releaseDropsOnlyPagesThatAreCopiesOfTheirFile() throws {
        // Mapped executable from the temporary folder, as the suite runs plugin scripts from there.
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let pages = 4
        let size = pages * Int(getpagesize())
        let content = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
        let image = folder.path("image.so"), data = folder.path("data.bin")
        for file in [image, data] { try Data(content).write(to: URL(fileURLWithPath: file)) }

        let code = try map(image, size: size, protection: PROT_READ | PROT_EXEC)
        let readOnly = try map(image, size: size, protection: PROT_READ)
        let sealed = try map(image, size: size, protection: PROT_READ | PROT_WRITE)
        sealed.storeBytes(of: 0xAB, as: UInt8.self)  // a private copy of its first page, as relocation makes
        #expect(mprotect(sealed, size, PROT_READ) == 0)
        let dataFile = try map(data, size: size, protection: PROT_READ)
        defer { for mapping in [code, readOnly, sealed, dataFile] { munmap(mapping, size) } }
        for mapping in [code, readOnly, sealed, dataFile] { touch(mapping, size: size) }
        for mapping in [code, readOnly, sealed, dataFile] { #expect(residentPages(mapping, pages: pages) == pages) }

        let released = try ResidentCode.release()
        #expect(released.mappings >= 2)
        #expect(released.bytes >= 2 * size)
        #expect(released.refused == 0)

        #expect(residentPages(code, pages: pages) == 0)
        #expect(residentPages(readOnly, pages: pages) == 0)
        #expect(residentPages(sealed, pages: pages) == pages)
        #expect(residentPages(dataFile, pages: pages) == pages)
        // Read again: the file's bytes, and the sealed mapping's own first byte.
        #expect(Array(UnsafeRawBufferPointer(start: code, count: size)) == content)
        #expect(Array(UnsafeRawBufferPointer(start: readOnly, count: size)) == content)
        #expect(sealed.load(as: UInt8.self) == 0xAB)
        #expect(Array(UnsafeRawBufferPointer(start: sealed, count: size).dropFirst()) == Array(content.dropFirst()))
    }

    // MARK: Helpers (the test's own system calls, on mappings it made itself)

    private func map(_ path: String, size: Int, protection: Int32) throws -> UnsafeMutableRawPointer {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        try #require(fd >= 0)
        defer { close(fd) }
        let pointer = mmap(nil, size, protection, MAP_PRIVATE, fd, 0)
        try #require(pointer != MAP_FAILED, "mmap \(path): errno \(errno)")
        return try #require(pointer)
    }

    private func touch(_ mapping: UnsafeMutableRawPointer, size: Int) {
        var sum = 0
        for offset in stride(from: 0, to: size, by: Int(getpagesize())) { sum &+= Int(mapping.load(fromByteOffset: offset, as: UInt8.self)) }
        withExtendedLifetime(sum) {}
    }

    /// Pages of the mapping present in this process's page table (bit 63 of /proc/self/pagemap).
    private func residentPages(_ mapping: UnsafeMutableRawPointer, pages: Int) -> Int {
        let fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return -1 }
        defer { close(fd) }
        var entries = [UInt64](repeating: 0, count: pages)
        let offset = off_t(UInt(bitPattern: mapping) / UInt(getpagesize()) * 8)
        let read = entries.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, offset) }
        guard read == pages * 8 else { return -1 }
        return entries.filter { $0 & (1 << 63) != 0 }.count
    }
}
