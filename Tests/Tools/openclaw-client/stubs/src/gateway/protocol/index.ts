// lanbridge's stand-in for OpenClaw's protocol index, which compiles 111 Ajv schemas at load:
// the client uses only the version and three frame checks, written here structurally.
export const PROTOCOL_VERSION = 3;
export type ConnectParams = Record<string, unknown>;
export type EventFrame = { type: "event"; event: string; payload?: unknown; seq?: number };
export type RequestFrame = { type: "req"; id: string; method: string; params?: unknown };
export type HelloOk = Record<string, any>;
type Check = ((value: unknown) => boolean) & { errors?: unknown };
const object = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null;
export const validateEventFrame: Check = (v) => object(v) && v.type === "event" && typeof v.event === "string";
export const validateRequestFrame: Check = (v) => object(v) && v.type === "req" && typeof v.id === "string" && typeof v.method === "string";
export const validateResponseFrame: Check = (v) => object(v) && v.type === "res" && typeof v.id === "string" && typeof v.ok === "boolean";
