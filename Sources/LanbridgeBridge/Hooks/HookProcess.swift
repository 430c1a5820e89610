#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif
import Dispatch
import FoundationEssentials

/// A child process for an operator's hook, spawned so that it gets nothing of the daemon's but what
/// is handed to it: stdin and one pipe for stdout and stderr, every other descriptor closed (a
/// node's socket or the gateway link is never inherited, whether or not it was opened close-on-exec),
/// default signal dispositions and an empty mask (the daemon ignores SIGPIPE), and a process group
/// of its own, so a hook that overruns is killed with whatever it started. Foundation's `Process`
/// does none of the first three on Linux.
struct HookProcess {
    let pid: pid_t
    /// The write end of the child's stdin, and the read end of its output.
    private let input: Int32, output: Int32

    struct SpawnError: Error, CustomStringConvertible {
        let description: String
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), looked up at run time:
    /// the Swift Glibc module does not declare it.
    private typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private static let closeFrom: CloseFrom? = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np").map { unsafeBitCast($0, to: CloseFrom.self) }

    /// Whether hooks can be spawned here at all (checked when `serve` starts with one configured).
    static var isSupported: Bool { closeFrom != nil }

    static func spawn(_ path: String, arguments: [String], environment: [String: String]) throws(SpawnError) -> HookProcess {
        guard let closeFrom else { throw SpawnError(description: "this C library cannot close inherited descriptors in a child (glibc 2.34 or later needed)") }
        // The child closes everything past stderr itself; close-on-exec is for anyone else's fork.
        var stdinPipe: [Int32] = [-1, -1], outputPipe: [Int32] = [-1, -1]
        guard pipe(&stdinPipe) == 0 else { throw SpawnError(description: "pipe: \(String(cString: strerror(errno)))") }
        guard pipe(&outputPipe) == 0 else {
            stdinPipe.forEach { close($0) }
            throw SpawnError(description: "pipe: \(String(cString: strerror(errno)))")
        }
        for fd in stdinPipe + outputPipe { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        defer { close(stdinPipe[0]); close(outputPipe[1]) }  // the child's ends

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, stdinPipe[0], 0)
        posix_spawn_file_actions_adddup2(&actions, outputPipe[1], 1)
        posix_spawn_file_actions_adddup2(&actions, outputPipe[1], 2)
        _ = closeFrom(&actions, 3)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = environment.sorted { $0.key < $1.key }.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let failed = posix_spawn(&pid, path, &actions, &attributes, argv, envp)
        guard failed == 0 else {
            close(stdinPipe[1]); close(outputPipe[0])
            throw SpawnError(description: "\(path): \(String(cString: strerror(failed)))")
        }
        return HookProcess(pid: pid, input: stdinPipe[1], output: outputPipe[0])
    }

    /// Writes `bytes` to the child's stdin and closes it; a child that does not read them is its
    /// own business (EPIPE ends the write).
    func send(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(input, $0.baseAddress, $0.count) }
            if written < 0, errno == EINTR { continue }
            guard written > 0 else { break }
            offset += written
        }
        close(input)
    }

    /// Reads the output until every holder of the pipe has closed it, or `deadline` (uptime
    /// nanoseconds) passes: something the hook started in a session of its own, out of reach of
    /// the group kill, may hold the pipe open for ever. Passes each chunk on.
    func readOutput(until deadline: UInt64, _ chunk: (UnsafeRawBufferPointer) -> Void) {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let now = DispatchTime.now().uptimeNanoseconds
            guard now < deadline else { break }
            var ready = pollfd(fd: output, events: Int16(POLLIN), revents: 0)
            let polled = poll(&ready, 1, Int32(min((deadline - now) / 1_000_000 + 1, UInt64(Int32.max))))
            if polled < 0, errno == EINTR { continue }
            guard polled > 0 else { break }
            let count = buffer.withUnsafeMutableBytes { read(output, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            buffer.withUnsafeBytes { chunk(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
        }
        close(output)
    }

    enum Termination: Equatable {
        case exited(Int32), signalled(Int32)
    }

    /// Waits for the child to end, then, with `beforeReaping` (which the killer's lock makes the
    /// last moment a kill may target it), reaps it: until then its PID, and so its group's, cannot
    /// be anyone else's.
    func wait(beforeReaping: () -> Void) -> Termination {
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) < 0, errno == EINTR {}
        beforeReaping()
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        return status & 0x7f == 0 ? .exited((status >> 8) & 0xff) : .signalled(status & 0x7f)
    }

    /// SIGKILLs the child's whole process group (call only before it is reaped).
    func killGroup() {
        kill(-pid, SIGKILL)
    }
}
