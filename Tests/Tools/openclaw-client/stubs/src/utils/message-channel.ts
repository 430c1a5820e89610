// lanbridge's stand-in: only what the gateway client reads, from OpenClaw's own client-info.ts.
export { GATEWAY_CLIENT_MODES, GATEWAY_CLIENT_NAMES } from "../gateway/protocol/client-info.js";
export type { GatewayClientMode, GatewayClientName } from "../gateway/protocol/client-info.js";
