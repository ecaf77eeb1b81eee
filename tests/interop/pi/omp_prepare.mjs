// Prints what oh-my-pi's own exported functions prepare on session files, for every entry taken
// as the leaf (compaction) and every ordered pair of entries (branch summary). Read-only.
//
//   bun omp_prepare.mjs <package> <request.json>
//
// request.json: {"files": [...], "keep": [keepRecentTokens...], "budgets": [tokenBudget...]}
// Output: {"<file>": {"prepare": {"<leaf>": {"<keep>": result|null}},
//                     "branch": {"<from>": {"<to>": {"<budget>": result}}}}}
// Token counting is oh-my-pi's default tokenizer (no model: its byte estimate); the serialized
// text is the `xml` dialect oh-my-pi picks for a model it does not know.
import { readFileSync } from "node:fs";

import { loadSession } from "./session_entries.mjs";

const [pkg, requestPath] = process.argv.slice(2);
const request = JSON.parse(readFileSync(requestPath, "utf8"));
const pi = await import(pkg);
const core = await import("@oh-my-pi/pi-agent-core");
const { preferredDialect } = await import("@oh-my-pi/pi-catalog/identity");

const dialect = preferredDialect("fake-model");

function text(messages) {
  return core.serializeConversationForSummary(pi.convertToLlm(messages), dialect);
}

function lists(fileOps) {
  const { readFiles, modifiedFiles } = core.computeFileLists(fileOps);
  return { readFiles, modifiedFiles };
}

const out = { dialect };
for (const file of request.files) {
  const { entries, branchOf, session } = loadSession(pi, file, ["session", "title"]);

  const prepare = {};
  for (const leaf of entries) {
    const perKeep = {};
    for (const keep of request.keep) {
      const prep = core.prepareCompaction(branchOf(leaf.id), { enabled: true, keepRecentTokens: keep });
      perKeep[keep] = prep
        ? {
            firstKeptEntryId: prep.firstKeptEntryId,
            isSplitTurn: prep.isSplitTurn,
            tokensBefore: prep.tokensBefore,
            messagesToSummarize: prep.messagesToSummarize,
            turnPrefixMessages: prep.turnPrefixMessages,
            recentMessages: prep.recentMessages,
            previousSummary: prep.previousSummary ?? null,
            ...lists(prep.fileOps),
            conversationText: text(prep.messagesToSummarize),
            turnPrefixText: prep.isSplitTurn ? text(prep.turnPrefixMessages) : null,
          }
        : null;
    }
    prepare[leaf.id] = perKeep;
  }

  const branch = {};
  if (request.budgets.length > 0) {
    for (const from of entries) {
      const row = {};
      for (const to of entries) {
        const { entries: collected, commonAncestorId } = core.collectEntriesForBranchSummary(session, from.id, to.id);
        const perBudget = {};
        for (const budget of request.budgets) {
          const prep = core.prepareBranchEntries(collected, new core.Tokenizer(), budget);
          perBudget[budget] = {
            commonAncestorId,
            entryIds: collected.map((e) => e.id),
            messages: prep.messages,
            totalTokens: prep.totalTokens,
            ...lists(prep.fileOps),
            conversationText: text(prep.messages),
          };
        }
        row[to.id] = perBudget;
      }
      branch[from.id] = row;
    }
  }
  out[file] = { prepare, branch };
}
process.stdout.write(JSON.stringify(out) + "\n");
