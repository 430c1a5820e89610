/// What the driver calls out to beyond the core and its channels, handed over on its loop
/// (`BridgeDriver.attach`) as each comes up, before what uses it can run.
struct DriverOutlets {
    /// With the OpenClaw gateway protocol: the nodes' sockets there (before the bridge listens).
    var openClaw: OpenClawLinks?
    /// The canvas relay, when there is a canvas host.
    var canvasRelay: CanvasRelay?
    /// The link's dialler, for `lanbridge gateway reconnect` (before the control socket listens).
    var gatewayDialler: GatewayLink?
    /// Told each rotated certificate's SHA-256 (the mDNS advertisement for OpenClaw's apps names it).
    var doorCertificateRotated: @Sendable (String) -> Void = { _ in }
    /// Told when what the console shows live has changed (before the console listens).
    var liveChanged: @Sendable (ConsoleEvents.Topic) -> Void = { _ in }
    /// Runs the notify hook (before the control socket and the doors open).
    var askNotifier: AskNotifier?
}
