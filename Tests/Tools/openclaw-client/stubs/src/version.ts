// lanbridge's stand-in: OpenClaw's reads package.json through import.meta.url, absent in CommonJS.
export const VERSION = "lanbridge-test";
