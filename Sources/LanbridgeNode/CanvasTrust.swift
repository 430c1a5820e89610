import LanbridgeProtocol

#if canImport(Security)
    #if canImport(FoundationEssentials)
        import FoundationEssentials
    #else
        import Foundation
    #endif
    import Security

    extension CanvasAccess {
        /// For a `URLSession` or `WKWebView` server-trust challenge on the canvas relay: true only
        /// when the leaf certificate is the one the bridge named (`tlsSha256`). Answer the challenge
        /// with `.useCredential` when true, `.cancelAuthenticationChallenge` otherwise.
        ///
        ///     func urlSession(_ session: URLSession, didReceive challenge: URLAuthenticationChallenge) async
        ///         -> (URLSession.AuthChallengeDisposition, URLCredential?) {
        ///         guard let trust = challenge.protectionSpace.serverTrust, canvas.accepts(trust) else { return (.cancelAuthenticationChallenge, nil) }
        ///         return (.useCredential, URLCredential(trust: trust))
        ///     }
        ///
        /// (Not compiled on Linux, where there is no `Security`; `pins(certificateDER:)` is the check.)
        public func accepts(_ trust: SecTrust) -> Bool {
            guard let chain = SecTrustCopyCertificateChain(trust) as? [SecCertificate], let leaf = chain.first else { return false }
            return pins(certificateDER: Array(SecCertificateCopyData(leaf) as Data))
        }
    }
#endif
