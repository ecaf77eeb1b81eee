// Drives a real Pi (its SDK) through a scripted session, offline against the test's fake model.
//
//   node drive.mjs <package> <scenario.json>
//
// <package> is the npm name of the Pi to use (@mariozechner/pi-coding-agent,
// @earendil-works/pi-coding-agent, or @oh-my-pi/pi-coding-agent run under bun). The scenario names the agent dir (models.json and
// settings.json already written by the test), the working directory, the session file to open
// (or none: a new session in `sessionDir`) and the steps. Prints one JSON object: the session
// file, any fork files and what each step returned.
//
// Steps: {"op":"prompt","text"}                    one user turn (tool calls run for real)
//        {"op":"compact","instructions"?}          manual compaction
//        {"op":"navigate","target","summarize"?}   /tree: move the leaf, optionally summarizing
//        {"op":"label","target","label"}           label an entry
//        {"op":"fork","target"}                    /fork at an entry into a new session file
//        {"op":"contextEdit","target","replacement"?} Pi 1.6's SessionManager.appendContextEdit, as an
//                                                  extension calls it: omit (no replacement) or replace
//        {"op":"name","name"}                      name the session (/name)
// A target is {"id"} or {"userText"}: the latest user message whose text contains it; with
// "answer": true, the last assistant message of that user message's turn.
import { readFileSync } from "node:fs";

const [pkg, scenarioPath] = process.argv.slice(2);
const scenario = JSON.parse(readFileSync(scenarioPath, "utf8"));
const pi = await import(pkg);

function textOf(message) {
  const content = message?.content;
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.filter((b) => b.type === "text").map((b) => b.text).join("");
}

function resolveTarget(manager, target) {
  if (target.id) return target.id;
  const matches = manager
    .getEntries()
    .filter((e) => e.type === "message" && e.message.role === "user" && textOf(e.message).includes(target.userText));
  if (matches.length === 0) throw new Error(`no user message contains ${JSON.stringify(target.userText)}`);
  const user = matches[matches.length - 1];
  if (!target.answer) return user.id;
  // The turn's last assistant message: walk the active branch from the user message on.
  const branch = manager.getBranch();
  let answer;
  for (const entry of branch.slice(branch.findIndex((e) => e.id === user.id) + 1)) {
    if (entry.type !== "message") continue;
    if (entry.message.role === "user") break;
    if (entry.message.role === "assistant") answer = entry.id;
  }
  if (!answer) throw new Error(`no answer to ${JSON.stringify(target.userText)} on the branch`);
  return answer;
}

async function settle(session) {
  // Threshold compaction runs after the turn; wait until the session is quiet.
  for (let i = 0; i < 600; i++) {
    if (!session.isCompacting && !session.isStreaming) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error("session did not settle");
}

// oh-my-pi's open() is async; Pi's is not (awaiting a plain value is harmless).
const manager = scenario.sessionFile
  ? await pi.SessionManager.open(scenario.sessionFile, scenario.sessionDir)
  : pi.SessionManager.create(scenario.cwd, scenario.sessionDir);
const { session } = await pi.createAgentSession({
  cwd: scenario.cwd,
  agentDir: scenario.agentDir,
  sessionManager: manager,
});

const results = [];
const forks = [];
let mainFile;
try {
  for (const step of scenario.steps) {
    if (step.op === "prompt") {
      await session.prompt(step.text);
      await settle(session);
      results.push({ op: "prompt", leaf: manager.getLeafId() });
    } else if (step.op === "compact") {
      const result = await session.compact(step.instructions);
      results.push({ op: "compact", summary: result.summary, firstKeptEntryId: result.firstKeptEntryId });
    } else if (step.op === "navigate") {
      const target = resolveTarget(manager, step.target);
      const result = await session.navigateTree(target, { summarize: Boolean(step.summarize) });
      results.push({ op: "navigate", target, cancelled: result.cancelled, summaryId: result.summaryEntry?.id ?? null });
    } else if (step.op === "label") {
      const target = resolveTarget(manager, step.target);
      results.push({ op: "label", id: manager.appendLabelChange(target, step.label) });
    } else if (step.op === "fork") {
      const target = resolveTarget(manager, step.target);
      mainFile ??= manager.getSessionFile();
      const file = await manager.createBranchedSession(target);
      forks.push(file);
      results.push({ op: "fork", file });
      // createBranchedSession switched this manager to the fork; continue in the original.
      await manager.setSessionFile(mainFile);
    } else if (step.op === "contextEdit") {
      const target = resolveTarget(manager, step.target);
      const replacement = step.replacement === undefined ? null : { content: step.replacement };
      results.push({ op: "contextEdit", target, id: manager.appendContextEdit(target, replacement) });
    } else if (step.op === "name") {
      // Pi: a session_info entry; oh-my-pi: its title slot and a title_change entry.
      if (manager.appendSessionInfo) results.push({ op: "name", id: manager.appendSessionInfo(step.name) });
      else results.push({ op: "name", changed: await manager.setSessionName(step.name, "user") });
    } else {
      throw new Error(`unknown step ${step.op}`);
    }
  }
} finally {
  await session.dispose();
}
process.stdout.write(JSON.stringify({ sessionFile: mainFile ?? manager.getSessionFile(), forks, results }) + "\n");
process.exit(0);
