// The first judge of the compatibility gate: api-smart-diff's own
// classification of every change from the baseline ($1) to the served
// description ($2). Prints each change it calls breaking with its own
// explanation and exits 1 if there is one. Its rules are its own: this
// file only reads, prints and counts. One policy is added on top: a
// removal the tool leaves unclassified (it has no rule for the key, such
// as `x-error-codes`, the error codes a response lists) is treated as
// breaking until a person decides otherwise; an unclassified addition is
// reported and passes. Both descriptions are compared with every local
// `$ref` resolved and without `components`: the tool judges a schema in
// `components` as free-standing JSON, not knowing whether a request or a
// response uses it, so a change there is judged where an operation uses
// it, with its direction. The `webhooks` are left to tools/compat/rules.py:
// the tool has no rules for them (every change there is unclassified).
"use strict";
const fs = require("fs");
const yaml = require("js-yaml");
const { apiCompare } = require("api-smart-diff");

const [beforeFile, afterFile] = process.argv.slice(2);
const load = (f) => yaml.load(fs.readFileSync(f, "utf8"));

// `doc` without `components`, each local `$ref` replaced by what it names
// (sibling keywords kept beside it); a reference inside itself is kept.
function resolved(doc) {
  const target = (ref) =>
    ref.slice(2).split("/").reduce((node, part) => node[part.replace(/~1/g, "/").replace(/~0/g, "~")], doc);
  const walk = (value, seen) => {
    if (Array.isArray(value)) return value.map((v) => walk(v, seen));
    if (!value || typeof value !== "object") return value;
    const ref = value.$ref;
    if (typeof ref === "string" && ref.startsWith("#/") && !seen.includes(ref)) {
      const { $ref, ...siblings } = value;
      return walk({ ...target(ref), ...siblings }, [...seen, ref]);
    }
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v, seen)]));
  };
  const { components, ...rest } = doc;
  return walk(rest, []);
}

const { diffs } = apiCompare(resolved(load(beforeFile)), resolved(load(afterFile)));
const where = (d) => d.path.map(String).join(" > ");
const operational = diffs.filter((d) => d.path[0] !== "webhooks");
const breaking = operational.filter((d) => d.type === "breaking");
const unclassifiedRemovals = operational.filter((d) => d.type === "unclassified" && d.action === "remove");
const unclassifiedOther = operational.filter((d) => d.type === "unclassified" && d.action !== "remove");
const counts = {};
for (const d of operational) counts[d.type] = (counts[d.type] || 0) + 1;
console.log(`api-smart-diff: ${operational.length} changes ${JSON.stringify(counts)}`);
for (const d of breaking) console.log(`  BREAKING ${d.action}: ${d.description || "(no text)"}\n    at ${where(d)}`);
for (const d of unclassifiedRemovals)
  console.log(`  UNCLASSIFIED REMOVAL (treated as breaking) ${d.description || ""}\n    at ${where(d)}`);
for (const d of unclassifiedOther) console.log(`  unclassified ${d.action} (passes): ${d.description || ""}\n    at ${where(d)}`);
process.exit(breaking.length + unclassifiedRemovals.length > 0 ? 1 : 0);
