// A permissive stand-in for zod (not in Debian, not reachable here). OpenClaw builds its config
// schemas with zod at module load; this lets them be built and accepts every value unchanged:
// schema.parse(x) returns x, safeParse(x) succeeds. The gateway's config validation is therefore
// NOT exercised by this harness (the harness writes the config it runs with; see ../README.md).
const handler = {
  get(target, prop) {
    if (prop === "parse" || prop === "parseAsync") return (value) => (prop === "parse" ? value : Promise.resolve(value));
    if (prop === "safeParse") return (value) => ({ success: true, data: value });
    if (prop === "safeParseAsync") return async (value) => ({ success: true, data: value });
    if (prop === "then") return undefined; // not a thenable
    if (prop === Symbol.toPrimitive) return () => "[zod stand-in]";
    if (prop === Symbol.iterator) return undefined;
    if (prop === "prototype") return target.prototype;
    if (prop === "shape" || prop === "_def" || prop === "def") return {};
    if (prop === "options") return [];
    return schema();
  },
  apply() { return schema(); },
  construct() { return schema(); },
};
function schema() { return new Proxy(function zodStandIn() {}, handler); }
export const z = schema();
export const ZodIssueCode = new Proxy({}, { get: (_, prop) => String(prop) });
export const NEVER = Symbol("zod.NEVER");
// Classes that code tests with instanceof: nothing is an instance of these.
export class ZodType {}
export class ZodObject extends ZodType {}
export class ZodArray extends ZodType {}
export class ZodUnion extends ZodType {}
export class ZodRecord extends ZodType {}
export class ZodNever extends ZodType {}
export class ZodIntersection extends ZodType {}
export class ZodDiscriminatedUnion extends ZodType {}
export class ZodError extends Error {}
export default z;
