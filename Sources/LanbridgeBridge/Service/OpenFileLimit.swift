import Glibc

/// The process's open-file limit (RLIMIT_NOFILE), which caps the connections the bridge holds.
enum OpenFileLimit {
    /// Raises the soft limit toward `needed`, as far as the hard limit (and the sandbox: the
    /// packaged unit forbids setrlimit and sets LimitNOFILE instead) allow; returns the soft limit
    /// in force.
    static func raise(toward needed: Int) -> Int {
        var limits = rlimit()
        #if canImport(Glibc)
            let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        #else
            let resource = RLIMIT_NOFILE
        #endif
        guard getrlimit(resource, &limits) == 0 else { return Int.max }
        let wanted = rlim_t(max(needed, 0))
        if limits.rlim_cur < wanted, limits.rlim_max > limits.rlim_cur {
            var raised = limits
            raised.rlim_cur = min(limits.rlim_max, wanted)
            if setrlimit(resource, &raised) == 0 { limits = raised }
        }
        return limits.rlim_cur >= rlim_t(Int.max) ? Int.max : Int(limits.rlim_cur)
    }
}
