// A small stand-in for tslog's Logger (not in Debian): what OpenClaw's src/logging/ calls of it.
// Each log call hands its transports the object tslog would ({0: first arg, 1: …, _meta}).
const levels = { silly: 0, trace: 1, debug: 2, info: 3, warn: 4, error: 5, fatal: 6 };
export class Logger {
  constructor(settings = {}, parent) {
    this.settings = { minLevel: 0, ...settings };
    this.transports = parent ? parent.transports : [];
  }
  attachTransport(transport) { this.transports.push(transport); }
  getSubLogger(settings = {}) {
    return new Logger({ ...this.settings, ...settings }, this);
  }
  log(levelId, levelName, ...args) {
    if (levelId < (this.settings.minLevel ?? 0)) return undefined;
    const record = { ...args };
    record._meta = { date: new Date(), logLevelId: levelId, logLevelName: levelName.toUpperCase(), name: this.settings.name };
    for (const transport of this.transports) transport(record);
    return record;
  }
}
for (const [name, id] of Object.entries(levels)) {
  Logger.prototype[name] = function (...args) { return this.log(id, name, ...args); };
}
export default { Logger };
