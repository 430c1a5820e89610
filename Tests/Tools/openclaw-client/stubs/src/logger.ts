// lanbridge's stand-in for OpenClaw's logger (its real one pulls tslog, chalk and json5).
export function logDebug(message: string): void {
  if (process.env.OPENCLAW_CLIENT_DEBUG) console.error(message);
}
export function logError(message: string): void {
  console.error(message);
}
