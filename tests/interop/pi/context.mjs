// Prints what a real Pi builds as the model context for every entry of session files taken as
// the leaf: {"<file>": {"<entryId>": {messages, thinkingLevel, model}}}. Read-only: the files are
// parsed and migrated in memory (Pi's own loader would rewrite v1/v2 files in place).
//
//   node context.mjs <package> <file.jsonl>...
import { readFileSync } from "node:fs";

const [pkg, ...files] = process.argv.slice(2);
const pi = await import(pkg);
const out = {};
for (const file of files) {
  const fileEntries = pi.parseSessionEntries(readFileSync(file, "utf8"));
  pi.migrateSessionEntries(fileEntries);
  // oh-my-pi puts a title slot line before the header.
  const entries = fileEntries.filter((e) => e.type !== "session" && e.type !== "title");
  const byId = new Map(entries.map((e) => [e.id, e]));
  const contexts = {};
  for (const entry of entries) contexts[entry.id] = pi.buildSessionContext(entries, entry.id, byId);
  out[file] = contexts;
}
process.stdout.write(JSON.stringify(out) + "\n");
