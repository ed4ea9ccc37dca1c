// The first judge of the compatibility gate: api-smart-diff's own
// classification of every change from the baseline ($1) to the served
// description ($2). Prints each change it calls breaking with its own
// explanation and exits 1 if there is one. Its rules are its own: this
// file only reads, prints and counts. One policy is added on top: a
// removal the tool leaves unclassified (it has no rule for the key, such
// as `x-error-codes`, the error codes a response lists) is treated as
// breaking until a person decides otherwise; an unclassified addition is
// reported and passes. Changes under `components` are left out: the tool
// judges them as free-standing JSON Schemas without knowing whether a
// request or a response uses them, and the same change is judged again,
// with its direction, where an operation uses it.
"use strict";
const fs = require("fs");
const yaml = require("js-yaml");
const { apiCompare } = require("api-smart-diff");

const [beforeFile, afterFile] = process.argv.slice(2);
const load = (f) => yaml.load(fs.readFileSync(f, "utf8"));
const { diffs } = apiCompare(load(beforeFile), load(afterFile));
const where = (d) => d.path.map(String).join(" > ");
const operational = diffs.filter((d) => d.path[0] !== "components");
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
