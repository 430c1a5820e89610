import Foundation
import LanbridgeFiles
import LanbridgeState
import Testing
import TestSupport

/// Who may use a state directory, and what a file written into it becomes.
struct StateSharingTests {
    @Test func onlyRwxForTheGroupAndNothingForOthersIsShared() {
        let dir = TemporaryDirectory()
        for (mode, shared) in [(0o700, false), (0o750, false), (0o770, true), (0o775, false), (0o777, false), (0o2770, true)] as [(mode_t, Bool)] {
            chmod(dir.path, mode)
            #expect((StateSharing.of(dir.url) != .ownerOnly) == shared, "\(String(mode, radix: 8))")
        }
    }

    /// Whatever the umask (the service's is 0077), a file in a shared directory is 0660 and the
    /// directory's group; a secret stays 0600; in a private directory everything is 0600.
    @Test func filesTakeTheDirectorysSharingWhateverTheUmask() throws {
        let dir = TemporaryDirectory()
        let old = umask(0o077)
        defer { umask(old) }
        let group: gid_t = getuid() == 0 ? 100 : getegid()  // root may give a file any group
        chown(dir.path, uid_t.max, group)
        chmod(dir.path, 0o770)
        try AtomicFile.write(Array("{}".utf8), to: dir.file("paired.json"))
        _ = try IdentityStore(directory: StateDirectory(url: dir.url)).loadOrCreate()
        try FileLock(url: dir.file(".lock")).withLock {}
        func mode(_ name: String) throws -> (mode_t, gid_t) {
            var info = stat()
            #expect(stat(dir.file(name).path, &info) == 0)
            return (info.st_mode & 0o777, info.st_gid)
        }
        #expect(try mode("paired.json") == (0o660, group))
        #expect(try mode("identity.pub") == (0o660, group))
        #expect(try mode(".lock") == (0o660, group))
        #expect(try mode("identity.key").0 == 0o600)

        let privateDir = TemporaryDirectory()
        try AtomicFile.write(Array("{}".utf8), to: privateDir.file("paired.json"))
        var info = stat()
        #expect(stat(privateDir.file("paired.json").path, &info) == 0 && info.st_mode & 0o777 == 0o600)
    }

    /// A shared directory is trusted by the daemon of its group (or root); one others may write
    /// never is.
    @Test func theDaemonAcceptsItsGroupsSharedDirectoryButNeverOneOthersCanWrite() throws {
        let dir = TemporaryDirectory()
        chown(dir.path, uid_t.max, getegid())
        chmod(dir.path, 0o770)
        try StateDirectory(url: dir.url).checkNotWritableByOthers()
        #expect(StateDirectory(url: dir.url).privacyProblem() == nil)
        chmod(dir.path, 0o772)
        #expect(throws: StoreError.self) { try StateDirectory(url: dir.url).checkNotWritableByOthers() }
        chmod(dir.path, 0o760)
        #expect(StateDirectory(url: dir.url).privacyProblem()?.contains("part way") == true)
    }
}
