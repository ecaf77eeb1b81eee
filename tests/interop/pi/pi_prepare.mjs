// Prints what a real Pi's own compaction functions prepare on session files: prepareCompaction for
// every entry taken as the leaf × keepRecentTokens, collectEntriesForBranchSummary +
// prepareBranchEntries for every ordered pair of entries × budgets. Read-only.
//
//   node pi_prepare.mjs <package> <request.json>
//
// prepareCompaction is not exported from Pi's package index: it is loaded from the installed file.
import { readFileSync } from "node:fs";

import { loadSession } from "./session_entries.mjs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const [pkg, requestPath] = process.argv.slice(2);
const request = JSON.parse(readFileSync(requestPath, "utf8"));
const pi = await import(pkg);
// The script runs beside the install's node_modules (see harness.PiHome._node).
const root = join(dirname(fileURLToPath(import.meta.url)), "node_modules", ...pkg.split("/"));
const dir = join(root, "dist", "core", "compaction");
const compaction = await import(pathToFileURL(join(dir, "compaction.js")).href);
const utils = await import(pathToFileURL(join(dir, "utils.js")).href);

const out = {};
for (const file of request.files) {
  const { entries, branchOf, session } = loadSession(pi, file, ["session"]);
  const prepare = {};
  for (const leaf of entries) {
    const perKeep = {};
    for (const keep of request.keep) {
      const prep = compaction.prepareCompaction(branchOf(leaf.id), { enabled: true, reserveTokens: 16384, keepRecentTokens: keep });
      perKeep[keep] = prep
        ? {
            firstKeptEntryId: prep.firstKeptEntryId,
            isSplitTurn: prep.isSplitTurn,
            tokensBefore: prep.tokensBefore,
            messagesToSummarize: prep.messagesToSummarize,
            turnPrefixMessages: prep.turnPrefixMessages,
            previousSummary: prep.previousSummary ?? null,
            ...utils.computeFileLists(prep.fileOps),
          }
        : null;
    }
    prepare[leaf.id] = perKeep;
  }
  const branch = {};
  for (const from of entries) {
    const row = {};
    for (const to of entries) {
      const { entries: collected, commonAncestorId } = pi.collectEntriesForBranchSummary(session, from.id, to.id);
      const perBudget = {};
      for (const budget of request.budgets) {
        const prep = pi.prepareBranchEntries(collected, budget);
        perBudget[budget] = {
          commonAncestorId,
          entryIds: collected.map((e) => e.id),
          messages: prep.messages,
          totalTokens: prep.totalTokens,
          ...utils.computeFileLists(prep.fileOps),
        };
      }
      row[to.id] = perBudget;
    }
    branch[from.id] = row;
  }
  out[file] = { prepare, branch };
}
process.stdout.write(JSON.stringify(out) + "\n");
