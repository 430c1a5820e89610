// Writes a throwing ES module for each npm specifier that OpenClaw's sources import and this
// machine cannot provide (Debian has no package for it and the npm registry is out of reach):
//   node make-stubs.mjs SOURCE_TREE NODE_MODULES INERT_LIST SPECIFIER...
// Each stub exports exactly the names the sources import from it. Importing one costs nothing;
// calling or constructing anything in it throws "… is not available in this build", so a gateway
// path that needs it fails loudly instead of doing something else. A node-serving gateway calls
// none of them (LLM providers, messaging channels, terminal UI, media, native add-ons).
import fs from "node:fs";
import path from "node:path";

const [tree, modules, inertFile, ...specifiers] = process.argv.slice(2);
// SPECIFIER:NAME = EXPRESSION lines (stubs/inert.txt): exports called while modules load.
const inert = new Map();
for (const line of fs.readFileSync(inertFile, "utf8").split("\n")) {
  const m = line.replace(/\s+#.*$/, "").match(/^([^#\s][^=]*?):([A-Za-z_$][\w$]*)\s*=\s*(.+)$/);
  if (m) inert.set(`${m[1]}:${m[2]}`, m[3]);
}
const wanted = new Set(specifiers);
const names = new Map(specifiers.map((s) => [s, new Set()]));

function* sources(dir) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) yield* sources(full);
    else if (/\.(ts|js|mts|mjs)$/.test(entry.name) && !/\.test\./.test(entry.name)) yield full;
  }
}

const statement = /(import|export)\s+(type\s+)?([\s\S]*?)\s+from\s+["']([^"']+)["']/g;
for (const file of sources(path.join(tree, "src"))) {
  const text = fs.readFileSync(file, "utf8");
  for (const m of text.matchAll(statement)) {
    const [, kind, typeOnly, clause, spec] = m;
    if (!wanted.has(spec) || typeOnly) continue;
    const set = names.get(spec);
    const braces = clause.match(/\{([\s\S]*)\}/);
    if (braces) {
      for (const part of braces[1].split(",")) {
        const item = part.trim();
        if (!item || item.startsWith("type ")) continue;
        const exported = item.split(/\s+as\s+/)[0].trim();
        if (/^[A-Za-z_$][\w$]*$/.test(exported) && exported !== "default") set.add(exported);
      }
    }
    if (kind === "export" && /^\*\s+as\s+/.test(clause)) continue;
  }
}

const prelude = `function stub(where) {
  const fail = () => { throw new Error(where + " is not available in this build of OpenClaw (a stub: see lanbridge's Tests/Tools/openclaw/README.md)"); };
  return new Proxy(function () {}, {
    apply: fail,
    construct: fail,
    get(target, prop) {
      if (prop === "then" || typeof prop === "symbol") return undefined;
      if (prop === "prototype") return target.prototype;
      return stub(where + "." + String(prop));
    },
  });
}
`;
for (const spec of specifiers) {
  const file = spec.endsWith(".js") ? path.join(modules, spec) : path.join(modules, spec, "index.js");
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const root = spec.startsWith("@") ? spec.split("/").slice(0, 2).join("/") : spec.split("/")[0];
  const manifest = path.join(modules, root, "package.json");
  if (!fs.existsSync(manifest)) fs.writeFileSync(manifest, JSON.stringify({ name: root, version: "0.0.0-stub", type: "module", main: "index.js" }) + "\n");
  const lines = [prelude, `export default stub(${JSON.stringify(spec)});`];
  for (const name of [...names.get(spec)].sort()) {
    const key = `${spec}:${name}`;
    lines.push(`export const ${name} = ${inert.get(key) ?? `stub(${JSON.stringify(key)})`};`);
  }
  fs.writeFileSync(file, lines.join("\n") + "\n");
}
