// lanbridge's stand-in for OpenClaw's device-auth store (zod-validated JSON): kept in memory.
type Entry = { token: string; role: string; scopes: string[]; updatedAtMs: number };
const tokens = new Map<string, Entry>();
export function loadDeviceAuthToken(params: { deviceId: string; role: string }): Entry | null {
  return tokens.get(`${params.deviceId}/${params.role}`) ?? null;
}
export function storeDeviceAuthToken(params: { deviceId: string; role: string; token: string; scopes?: string[] }): Entry {
  const entry = { token: params.token, role: params.role, scopes: params.scopes ?? [], updatedAtMs: Date.now() };
  tokens.set(`${params.deviceId}/${params.role}`, entry);
  return entry;
}
export function clearDeviceAuthToken(params: { deviceId: string; role: string }): void {
  tokens.delete(`${params.deviceId}/${params.role}`);
}
