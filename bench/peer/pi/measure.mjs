// The real Pi's session code timed on one session file, for compactd's side-by-side benchmark.
//
//   node measure.mjs FILE REPEATS
//
// Prints one JSON object: milliseconds per repetition for each step, and Pi's peak RSS after one
// open. Steps (what Pi itself does for them):
//   open      SessionManager.open(file)                    load, migrate, index
//   context   sessionManager.buildSessionContext()          the messages the model sees
//   prepare   prepareCompaction(getBranch(), settings)      what a compaction would summarize
//   prepareText  prepare + convertToLlm + serializeConversation of the messages to summarize
//             (and of the turn prefix when the turn is split): the text the summarizer is sent,
//             i.e. the same work compactd's prepareCompaction answer carries.
//   prepareTextNewLeaf  prepareText from the leaf and then from its parent (a lone entry: the
//             leaf, then the leaf with keepRecentTokens 20001), the dry runs the daemon's "prepare
//             at a new leaf" asks for, timed together and halved: where the two differ (a leaf
//             that is a compaction has nothing to summarize, its parent everything), the leaf alone
//             would not be like for like, and alternating samples would put the median between
//             the two kinds.
//   firstView  what an editor user waits for on opening a session: open, then context, then the
//             dry run with its text (prepareText), on the freshly opened session, in sequence.
//   afterMessage  what they wait for after each message, on a copy of the file (Pi writes each
//             appended entry): appendMessage of a user message, then the context's token figures
//             (buildSessionContext + estimateContextTokens, what Pi's footer shows), then the dry
//             run with its text at the new leaf. Pi recomputes each from its entries.
//   tokenStatsAfterAppend  the middle step of afterMessage alone.
// The file must be a copy: opening a v1/v2 file makes Pi rewrite it as v3.

import { performance } from "node:perf_hooks";
import { resourceUsage } from "node:process";
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const base = "./node_modules/@mariozechner/pi-coding-agent/dist/core";
const { SessionManager } = await import(`${base}/session-manager.js`);
const { prepareCompaction, estimateContextTokens, DEFAULT_COMPACTION_SETTINGS } = await import(
  `${base}/compaction/compaction.js`
);
const { serializeConversation } = await import(`${base}/compaction/utils.js`);
const { convertToLlm } = await import(`${base}/messages.js`);

const [file, repeatsArg] = process.argv.slice(2);
const repeats = Number(repeatsArg ?? 5);

function timed(fn) {
  const t0 = performance.now();
  const value = fn();
  return [performance.now() - t0, value];
}

// At least `repeats` runs; fast steps run until 0.3 s have passed (at most 10 × repeats), so a
// sub-millisecond median is not one noisy sample.
function samples(fn) {
  fn(); // warm-up, untimed (JIT, file cache)
  const out = [];
  let spent = 0;
  while (out.length < repeats || (spent < 300 && out.length < 10 * repeats)) {
    const [ms] = timed(fn);
    out.push(ms);
    spent += ms;
  }
  return out;
}

const baselineKb = resourceUsage().maxRSS;
const [firstOpenMs, session] = timed(() => SessionManager.open(file));
const peakKb = resourceUsage().maxRSS;

const settings = DEFAULT_COMPACTION_SETTINGS;
const prepare = () => prepareCompaction(session.getBranch(), settings);
const textOf = (prep) => {
  if (!prep) return "";
  let text = serializeConversation(convertToLlm(prep.messagesToSummarize));
  if (prep.isSplitTurn) text += serializeConversation(convertToLlm(prep.turnPrefixMessages));
  return text;
};
const prepareText = () => textOf(prepare());

const leafId = session.getLeafId();
const parentId = leafId ? session.getEntry(leafId)?.parentId ?? null : null;
const asks = [[leafId, settings], parentId ? [parentId, settings] : [leafId, { ...settings, keepRecentTokens: 20001 }]];
const prepareTextNewLeaves = () =>
  asks.map(([from, withSettings]) => textOf(prepareCompaction(from ? session.getBranch(from) : [], withSettings)));

const firstView = () => {
  const opened = SessionManager.open(file);
  opened.buildSessionContext();
  return textOf(prepareCompaction(opened.getBranch(), settings));
};

// After each message: on a copy, since Pi appends every entry to its file.
const scratch = mkdtempSync(join(tmpdir(), "pi-bench-"));
const copy = join(scratch, "session.jsonl");
copyFileSync(file, copy);
const appended = SessionManager.open(copy);
let turn = 0;
const statsTimes = [];
const afterMessage = () => {
  turn += 1;
  appended.appendMessage({ role: "user", content: [{ type: "text", text: `next step ${turn}` }], timestamp: 1760000000000 + turn });
  const t0 = performance.now();
  estimateContextTokens(appended.buildSessionContext().messages);
  statsTimes.push(performance.now() - t0);
  return textOf(prepareCompaction(appended.getBranch(), settings));
};

const prep = prepare();
const result = {
  pi: "@mariozechner/pi-coding-agent",
  node: process.version,
  entries: session.getEntries().length,
  firstOpenMs,
  baselineRssKb: baselineKb,
  peakRssKb: peakKb,
  contextMessages: session.buildSessionContext().messages.length,
  prepared: prep ? {
    firstKeptEntryId: prep.firstKeptEntryId,
    messagesToSummarize: prep.messagesToSummarize.length,
    turnPrefixMessages: prep.turnPrefixMessages.length,
    isSplitTurn: prep.isSplitTurn,
    tokensBefore: prep.tokensBefore,
    conversationChars: prepareText().length,
  } : null,
  open: samples(() => SessionManager.open(file)),
  context: samples(() => session.buildSessionContext()),
  prepare: samples(prepare),
  prepareText: samples(prepareText),
  prepareTextNewLeaf: samples(prepareTextNewLeaves).map((ms) => ms / asks.length),
  firstView: samples(firstView),
  afterMessage: samples(afterMessage),
};
result.tokenStatsAfterAppend = statsTimes.slice(1); // (the warm-up's left out, as in samples)
rmSync(scratch, { recursive: true, force: true });
process.stdout.write(JSON.stringify(result) + "\n");
