// A session file read the way the real programs read it, for the preparation scripts: the entries
// (headers of the given types left out), an id lookup, and the path from the root to any entry.
import { readFileSync } from "node:fs";

export function loadSession(pi, file, headerTypes) {
  const fileEntries = pi.parseSessionEntries(readFileSync(file, "utf8"));
  pi.migrateSessionEntries(fileEntries);
  const entries = fileEntries.filter((e) => !headerTypes.includes(e.type));
  const byId = new Map(entries.map((e) => [e.id, e]));
  const branchOf = (leaf) => {
    const path = [];
    for (let id = leaf; id; id = byId.get(id)?.parentId) {
      const entry = byId.get(id);
      if (!entry) break;
      path.unshift(entry);
    }
    return path;
  };
  return { entries, byId, branchOf, session: { getBranch: branchOf, getEntry: (id) => byId.get(id) } };
}
