// End-to-end: the extension's core modules against the REAL daemon (`python -m compactd serve`)
// over stdio, with the LSP handshake done through vscode-jsonrpc. Python comes from
// COMPACTD_PYTHON (else `python`, as in CI's virtualenv).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import type { Socket } from 'node:net';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CancellationTokenSource } from 'vscode-jsonrpc';
import { HookRegistry, hookMethod } from '../src/core/hooks';
import { Operation } from '../src/core/operation';
import { ErrorCodes } from '../src/core/protocol';
import type { CompactionEndParams, DidChangeParams } from '../src/core/protocol';
import { errorCode, isCancelled } from '../src/core/protocolClient';
import type { WorkDoneProgressValue } from '../src/core/protocolClient';
import { formatTokens, prepareCompactionMarkdown, statusText, entryMarkdown } from '../src/core/render';
import { SessionView } from '../src/core/sessionView';
import type { SessionSnapshot } from '../src/core/sessionView';
import { HOOK_NAMES, didChangeConfigurationParams, initializationOptions, readConfig } from '../src/core/settings';
import { ancestorsOf, branchText, buildTreeModel, rowText } from '../src/core/treeModel';
import type { TreeModel } from '../src/core/treeModel';
import { nextEvent, startDaemon } from './support/daemon';
import type { Daemon } from './support/daemon';
import { FakeOpenAI } from './support/fakeOpenAI';
import { fixtureCopy, piFixture, pythonExecutable, repoRoot, tempDir } from './support/paths';
import { writeBranchingSession, writeLinearSession } from './support/sessions';

const sha = (file: string): string => createHash('sha256').update(fs.readFileSync(file)).digest('hex');

/** Depth of each entry as the daemon's own `compactd tree` draws it (two columns per level). */
function updateWhere(view: SessionView, predicate: (s: SessionSnapshot) => boolean): Promise<SessionSnapshot> {
  return nextEvent<SessionSnapshot | undefined>(
    (h) => view.onDidUpdate(h),
    (s) => s !== undefined && predicate(s),
  ) as Promise<SessionSnapshot>;
}

describe('real daemon: the side panel model', { timeout: 180_000 }, () => {
  let d: Daemon;
  before(async () => {
    d = await startDaemon();
  });
  after(async () => {
    await d.stop();
  });

  it('advertises the methods the extension calls', () => {
    const caps = d.initializeResult.capabilities as { experimental: { compactd: { methods: string[]; serverRequests: string[] } } };
    for (const m of ['session/open', 'session/tree', 'session/entry', 'session/tokenStats', 'session/prepareCompaction', 'session/compact', 'session/navigate', 'session/label', 'session/fork', 'session/prune', 'session/abort']) {
      assert.ok(caps.experimental.compactd.methods.includes(m), m);
    }
    assert.deepEqual(caps.experimental.compactd.serverRequests, HOOK_NAMES.map(hookMethod));
  });

  it('shows the real Pi fixture (read in place, never written) as one flat list', async () => {
    const fixture = piFixture();
    const before = sha(fixture);
    const info = await d.client.open(fixture);
    const tree = await d.client.tree(info.sessionId);
    const model = buildTreeModel(tree);
    assert.equal(model.rows.length, info.entryCount);
    assert.ok(model.rows.length > 1000);
    // Pi's linear session: nothing nests, the leaf is the last row and every row is on its path.
    assert.equal(model.childrenOf(undefined).length, model.rows.length);
    assert.ok(model.rows.every((r) => r.depth === 0 && r.node.onLeafPath));
    assert.equal(model.rows.at(-1)!.id, info.leafId);
    assert.equal(model.rows.at(-1)!.node.isLeaf, true);
    const kinds = new Set(model.rows.map((r) => r.node.kind));
    for (const k of ['user', 'assistant', 'toolResult', 'compaction']) assert.ok(kinds.has(k), k);

    // A compaction node opens as its summary.
    const compaction = model.rows.find((r) => r.node.kind === 'compaction')!;
    const { entry } = await d.client.entry(info.sessionId, compaction.id);
    const md = entryMarkdown(entry);
    assert.match(md, /^# Compaction summary/);
    assert.ok(md.includes((entry.summary as string).trim().split('\n')[0]));

    const stats = await d.client.tokenStats(info.sessionId);
    assert.match(statusText(stats), /^\d+(\.\d)?k \/ \d+k \(\d+%\)$/);
    assert.equal(stats.threshold, stats.contextWindow - stats.reserveTokens);
    await d.client.close(info.sessionId);
    assert.equal(sha(fixture), before);
  });

  it('flattens a generated 1,000-entry linear session into one list', async () => {
    const file = writeLinearSession(tempDir(), 1000);
    const info = await d.client.open(file);
    const model = buildTreeModel(await d.client.tree(info.sessionId));
    assert.equal(model.rows.length, 1000);
    assert.equal(model.childrenOf(undefined).length, 1000);
    assert.ok(model.rows.every((r) => r.depth === 0 && !r.isBranchPoint));
    assert.equal(model.leafId, 'm999');
  });

  it('lists the path to the leaf flat and the other branches in groups', async () => {
    const { file, leafId } = writeBranchingSession(tempDir());
    const info = await d.client.open(file);
    const tree = await d.client.tree(info.sessionId);
    const model = buildTreeModel(tree);
    assert.equal(model.leafId, leafId);
    assert.deepEqual(model.childrenOf(undefined).map((r) => r.id), ['a0', 'a1', 'a2', 'a3', 'c0', 'c1', 'e0', 'e1']);
    assert.deepEqual(
      model.rows.map((r) => `${r.id}:${r.depth}`),
      ['a0:0', 'a1:0', 'a2:0', 'a3:0', 'b0:2', 'b1:2', 'c0:0', 'c1:0', 'd0:2', 'd1:2', 'e0:0', 'e1:0'],
    );
    // Each branch point on the path holds the branch the path does not take, flat in its group.
    assert.deepEqual(model.childrenOf('a3').map((r) => r.id), ['branch:b0']);
    assert.deepEqual(model.childrenOf('branch:b0').map((r) => r.id), ['b0', 'b1']);
    assert.deepEqual(model.childrenOf('c1').map((r) => r.id), ['branch:d0']);
    const group = model.childrenOf('a3')[0];
    assert.match(group.type === 'branch' ? branchText(group).label : '', /^Branch 1 of 2 · 2 entries · /);
    assert.deepEqual(ancestorsOf(model, 'e1').map((r) => r.id), []);
    assert.deepEqual(model.rows.filter((r) => r.node.onLeafPath).map((r) => r.id), ['a0', 'a1', 'a2', 'a3', 'c0', 'c1', 'e0', 'e1']);
  });

  it('a branching session from `compactd sample`: the leaf at depth 0, every entry reachable', async () => {
    const file = path.join(tempDir(), 'sample.jsonl');
    execFileSync(pythonExecutable(), ['-m', 'compactd', 'sample', file, '--seed', '7', '--turns', '40'], { cwd: repoRoot() });
    const info = await d.client.open(file);
    const tree = await d.client.tree(info.sessionId);
    const model = buildTreeModel(tree);
    const labels = tree.nodes.filter((n) => n.kind === 'label' && n.children.length <= 1).length;
    assert.equal(model.rows.length, tree.nodes.length - labels);
    assert.ok(model.rows.filter((r) => r.isBranchPoint).length >= 2, 'the sample has branches');
    // The whole path is the top level; every other row sits in groups, two levels per group opened.
    const leafRow = model.byId.get(model.leafRowId!)!;
    assert.equal(leafRow.depth, 0);
    assert.equal(leafRow.node.isLeaf, true);
    for (const row of model.rows) {
      assert.equal(row.depth === 0, row.node.onLeafPath || row.parentRowId === undefined, `depth of ${row.id}`);
      assert.equal(ancestorsOf(model, row.id).length, row.depth, `ancestors of ${row.id}`);
    }
  });

  it('renders the compaction dry run of the fixture', async () => {
    const info = await d.client.open(piFixture());
    const prep = await d.client.prepareCompaction({ sessionId: info.sessionId });
    assert.ok(prep !== null);
    const md = prepareCompactionMarkdown(prep);
    assert.match(md, /Context now, estimated: about \*\*[\d,]+\*\* tokens; kept after compaction: about \*\*[\d,]+\*\* tokens/);
    assert.match(md, /## Conversation text sent to the summarizer/);
    assert.ok(md.includes((prep.conversationText as string).slice(0, 200)));
    assert.match(md, new RegExp(`First kept entry \\| \`${prep.firstKeptEntryId}\``));
    const small = await d.client.open(writeLinearSession(tempDir(), 4));
    assert.equal(await d.client.prepareCompaction({ sessionId: small.sessionId }), null);
  });
});

describe('real daemon: compaction, navigation, labels with the embedded summarizer', { timeout: 180_000 }, () => {
  let d: Daemon;
  const view = new SessionView();
  before(async () => {
    const cfg = readConfig((key) => ({ summarizer: { backend: 'extractive' } })[key]);
    d = await startDaemon({ initializationOptions: initializationOptions(cfg) as unknown as Record<string, unknown> });
    await view.attach(d.client);
  });
  after(async () => {
    view.dispose();
    await d.stop();
  });

  it('compacts a copy of the fixture, streaming progress, and the panel follows session/didChange', async () => {
    const file = fixtureCopy();
    const sizeBefore = fs.statSync(file).size;
    const snap = await view.open(file);
    const oldLeaf = snap.model.leafId;
    // The fixture's model (claude-opus-4-5) has a 200k window: the daemon's verdict must agree with its numbers.
    assert.ok(snap.stats);
    assert.equal(snap.stats.shouldCompact, snap.stats.contextTokens > snap.stats.threshold);
    const progress: WorkDoneProgressValue[] = [];
    const changed = nextEvent<DidChangeParams>((h) => d.client.onDidChange(h));
    const ended = nextEvent<CompactionEndParams>((h) => d.client.onCompactionEnd(h));
    const updated = updateWhere(view, (s) => s.model.leafId !== oldLeaf);
    const op = new Operation('Compacting');
    const outcome = await op.run((token, onProgress) =>
      d.client.compact({ sessionId: snap.info.sessionId }, { token, onProgress: (v) => (progress.push(v), onProgress(v)) }),
    );
    assert.equal(outcome.outcome, 'completed');
    const result = outcome.outcome === 'completed' ? outcome.value : assert.fail();
    assert.match(result.summary, /## Goal/);
    assert.ok(result.tokensBefore > result.estimatedTokensAfter);
    // LSP work-done progress on our token: begin, reports with the streamed text, end.
    assert.equal(progress[0].kind, 'begin');
    assert.equal(progress.at(-1)!.kind, 'end');
    const reports = progress.filter((p) => p.kind === 'report');
    assert.ok(reports.length > 0);
    assert.ok(op.text.length > 0 && result.summary.startsWith(op.text.slice(0, 20)));
    assert.equal(op.percentage, 100);
    // The daemon announced the change and the panel reloaded by itself (no polling).
    assert.equal((await changed).sessionId, snap.info.sessionId);
    assert.equal((await ended).result?.entryId, result.entryId);
    const after = await updated;
    assert.equal(after.model.leafId, result.entryId);
    const leafRow = after.model.byId.get(result.entryId)!;
    const estimate = (x: SessionSnapshot): number => Number(x.stats?.estimatedTokens);
    assert.equal(leafRow.node.kind, 'compaction');
    assert.equal(leafRow.depth, 0);
    // Labelled by what it is, with the daemon's figures: before as stored, after as estimated.
    assert.equal(leafRow.node.tokensBefore, result.tokensBefore);
    // Like with like: the estimate of the context just before against the estimate just after.
    assert.equal(leafRow.node.contextBasis, 'estimate');
    assert.equal(leafRow.node.contextBefore, estimate(snap));
    assert.equal(leafRow.node.contextAfter, estimate(after));
    assert.equal(leafRow.node.contextShrank, true);
    assert.equal(rowText(leafRow).label,
      `● leaf · Compaction · about ${formatTokens(estimate(snap))} → ${formatTokens(estimate(after))} tokens (estimates)`);
    assert.equal(leafRow.node.tokensAfter, estimate(after));
    // contextTokens is usage-based (K-7) and still counts the kept assistant's pre-compaction usage,
    // so compare the plain estimate of what the model would now see.
    assert.ok(estimate(after) < estimate(snap));
    assert.ok(fs.statSync(file).size > sizeBefore);
    const { entry } = await d.client.entry(snap.info.sessionId, result.entryId);
    assert.ok(entryMarkdown(entry).includes(result.summary.trim().split('\n')[0]));
  });

  it('navigates with a branch summary: the user message comes back as editor text, the tree branches', async () => {
    const file = writeLinearSession(tempDir(), 12);
    const snap = await view.open(file);
    const updated = updateWhere(view, (s) => s.model.rows.some((r) => r.node.kind === 'branchSummary'));
    const result = await d.client.navigate(
      { sessionId: snap.info.sessionId, targetId: 'm4', summarize: true, customInstructions: 'focus on the build' },
      { onProgress: () => undefined },
    );
    assert.equal(result.cancelled, false);
    assert.equal(result.oldLeafId, 'm11');
    // m4 is a user message: the leaf goes to its parent and its text is handed back for re-sending.
    assert.equal(result.editorText, 'user message number 4 about the build');
    assert.ok(typeof result.summaryEntryId === 'string');
    assert.equal(result.newLeafId, result.summaryEntryId);
    const model: TreeModel = (await updated).model;
    const summaryRow = model.byId.get(result.summaryEntryId)!;
    assert.equal(summaryRow.node.kind, 'branchSummary');
    assert.equal(summaryRow.node.isLeaf, true);
    assert.equal(summaryRow.node.parentId, 'm3');
    // m3 now branches (m4... and the summary): the path m0..m3 + summary stays one flat list; m3
    // holds the branch left behind, flat in its group.
    assert.equal(model.byId.get('m3')!.isBranchPoint, true);
    assert.deepEqual(model.childrenOf(undefined).map((r) => r.id), ['m0', 'm1', 'm2', 'm3', result.summaryEntryId]);
    assert.deepEqual(model.childrenOf('m3').map((g) => g.id), ['branch:m4']);
    assert.ok(model.rows.filter((r) => r.depth > 0).every((r) => r.depth === 2 && r.parentRowId === 'branch:m4'));
    const left = model.childrenOf('m3')[0];
    assert.deepEqual(left.type === 'branch' ? branchText(left) : undefined,
      { label: 'Branch 1 of 2 · 8 entries · user: user message number 4 about the build', description: '' });
    assert.equal(rowText(model.byId.get('m3')!).label, '⎇ 1 other branch · assistant message number 3 about the build');
    // One count: the summary of the 8 entries m4..m11 is the new leaf, at the top level.
    assert.equal(rowText(summaryRow).label, '● leaf · Branch summary · summarizes 8 entries');
    assert.equal(summaryRow.depth, 0);
    assert.deepEqual(ancestorsOf(model, summaryRow.id), []);
    const { entry } = await d.client.entry(snap.info.sessionId, result.summaryEntryId);
    assert.equal(entry.fromId, 'm11');
    assert.match(entryMarkdown(entry), /^# Branch summary[\s\S]*Summarized branch ended at: `m11`/);
  });

  it('sets and clears a label; the panel shows it after session/didChange', async () => {
    const file = writeLinearSession(tempDir(), 6);
    const snap = await view.open(file);
    const labelled = updateWhere(view, (s) => s.model.byId.get('m2')?.node.label === 'checkpoint');
    const r = await d.client.label({ sessionId: snap.info.sessionId, targetId: 'm2', label: 'checkpoint' });
    assert.equal(r.label, 'checkpoint');
    await labelled;
    const cleared = updateWhere(view, (s) => s.model.byId.get('m2')?.node.label === null);
    await d.client.label({ sessionId: snap.info.sessionId, targetId: 'm2', label: null });
    await cleared;
  });

  it('forks to a new session file and plans pruning without touching the file', async () => {
    const file = writeLinearSession(tempDir(), 8);
    const info = await d.client.open(file);
    const forkPath = path.join(tempDir(), 'fork.jsonl');
    const fork = await d.client.fork({ sessionId: info.sessionId, leafId: 'm3', path: forkPath });
    assert.equal(fork.forkedAt, 'm3');
    assert.notEqual(fork.sessionId, info.sessionId);
    const forkTree = buildTreeModel(await d.client.tree(fork.sessionId));
    assert.equal(forkTree.rows.length, 4);
    const before = sha(file);
    const plan = await d.client.prune(info.sessionId, true);
    assert.equal(plan.prunedCount, 0);
    assert.deepEqual(plan.entryIds, []);
    assert.equal(sha(file), before);
  });
});

describe('real daemon: cancelling a slow summarization', { timeout: 180_000 }, () => {
  const slow = new FakeOpenAI({ chunks: Array.from({ length: 400 }, (_, i) => `## Goal part ${i}\n`), intervalMs: 50 });
  let d: Daemon;
  before(async () => {
    const baseUrl = await slow.start();
    const cfg = readConfig(
      (key) =>
        ({
          summarizer: { backend: 'openai', baseUrl, model: 'fake-model', apiKeyEnv: 'COMPACTD_TEST_KEY' },
          settings: { retry: { enabled: false } },
        })[key],
    );
    d = await startDaemon({
      initializationOptions: initializationOptions(cfg) as unknown as Record<string, unknown>,
      env: { COMPACTD_TEST_KEY: 'test-key-not-secret' },
    });
  });
  after(async () => {
    await d.stop();
    await slow.stop();
  });

  it('Cancel sends $/cancelRequest: RequestCancelled, the stream is closed, the file is unchanged', async () => {
    const file = fixtureCopy();
    const before = sha(file);
    const info = await d.client.open(file);
    const ended = nextEvent<CompactionEndParams>((h) => d.client.onCompactionEnd(h));
    const op = new Operation('Compacting');
    let sawText = false;
    const running = op.run((token, onProgress) =>
      d.client.compact(
        { sessionId: info.sessionId },
        {
          token,
          onProgress: (v) => {
            onProgress(v);
            if (v.kind === 'report' && typeof v.text === 'string' && v.text.includes('## Goal') && !sawText) {
              sawText = true;
              op.cancel(); // what the Cancel button and the Escape keybinding do
            }
          },
        },
      ),
    );
    const outcome = await running;
    assert.equal(sawText, true);
    assert.deepEqual(outcome, { outcome: 'cancelled' });
    assert.equal(op.state, 'done');
    await slow.clientClosed();
    assert.equal(slow.completed, 0);
    assert.ok(slow.closedEarly[0] < 400);
    assert.equal((await ended).aborted, true);
    assert.equal(sha(file), before);
    // The request reached the fake server with the configured model and our key variable.
    assert.equal(slow.requests[0].body.model, 'fake-model');
    assert.equal(slow.requests[0].headers.authorization, 'Bearer test-key-not-secret');
    // The daemon is still fine and the session has not moved.
    const tree = await d.client.tree(info.sessionId);
    assert.equal(tree.leafId, info.leafId);
    await d.client.close(info.sessionId); // the next test opens another copy with the same session id
  });

  it('a raw sendRequest cancelled through its token rejects with code -32800', async () => {
    const info = await d.client.open(fixtureCopy());
    const source = new CancellationTokenSource();
    const started = slow.requests.length;
    const pending = d.client.compact({ sessionId: info.sessionId }, {
      token: source.token,
      onProgress: (v) => {
        if (v.kind === 'report' && slow.requests.length > started) source.cancel();
      },
    });
    await assert.rejects(pending, (e: unknown) => {
      assert.equal((e as { code?: number }).code, -32800);
      assert.equal(isCancelled(e), true);
      return true;
    });
  });
});

describe('real daemon: hooks and live settings', { timeout: 180_000 }, () => {
  it('answers session/beforeCompact through the hook registry; a cancel answer stops the compaction', async () => {
    const hooks = new HookRegistry();
    const events: Record<string, unknown>[] = [];
    hooks.register('beforeCompact', (event) => {
      events.push(event);
      return { cancel: true };
    });
    const cfg = readConfig((key) => ({ summarizer: { backend: 'extractive' } })[key]);
    const d = await startDaemon({
      initializationOptions: initializationOptions(cfg, hooks.active()) as unknown as Record<string, unknown>,
      beforeInitialize: (client) => {
        for (const name of HOOK_NAMES) client.onHook(hookMethod(name), (event, token) => hooks.dispatch(name, event, token));
      },
    });
    try {
      const file = fixtureCopy();
      const before = sha(file);
      const info = await d.client.open(file);
      await assert.rejects(d.client.compact({ sessionId: info.sessionId }), (e: unknown) => {
        assert.equal(errorCode(e), ErrorCodes.cancelledByHook);
        return true;
      });
      assert.equal(events.length, 1);
      assert.equal(events[0].sessionId, info.sessionId);
      assert.equal((events[0].preparation as { firstKeptEntryId?: unknown }).firstKeptEntryId !== undefined, true);
      assert.equal(sha(file), before);
    } finally {
      await d.stop();
    }
  });

  it('declares a hook registered later through workspace/didChangeConfiguration', async () => {
    const hooks = new HookRegistry();
    const asked: string[] = [];
    const cfg = readConfig((key) => ({ summarizer: { backend: 'extractive' } })[key]);
    const d = await startDaemon({
      initializationOptions: initializationOptions(cfg, hooks.active()) as unknown as Record<string, unknown>,
      beforeInitialize: (client) => {
        for (const name of HOOK_NAMES) {
          client.onHook(hookMethod(name), (event, token) => {
            asked.push(name);
            return hooks.dispatch(name, event, token);
          });
        }
      },
    });
    try {
      // What the extension does on HookRegistry.onDidChangeActive.
      hooks.onDidChangeActive((active) => void d.connection.sendNotification('workspace/didChangeConfiguration', didChangeConfigurationParams(cfg, active)));
      const file = writeLinearSession(tempDir(), 10);
      const info = await d.client.open(file);
      // Not declared yet: the daemon asks nobody.
      const plain = await d.client.navigate({ sessionId: info.sessionId, targetId: 'm7', summarize: false });
      assert.equal(plain.cancelled, false);
      assert.deepEqual(asked, []);
      hooks.register('beforeTree', () => ({ summary: { summary: 'Summary supplied by an extension.' }, label: 'from-hook' }));
      const result = await d.client.navigate({ sessionId: info.sessionId, targetId: 'm3', summarize: true });
      assert.deepEqual(asked, ['beforeTree']);
      const { entry } = await d.client.entry(info.sessionId, result.summaryEntryId!);
      assert.equal(entry.summary, 'Summary supplied by an extension.');
      assert.equal(entry.fromHook, true);
      const tree = buildTreeModel(await d.client.tree(info.sessionId));
      // The hook's label override lands on the summary entry.
      assert.equal(tree.byId.get(result.summaryEntryId!)?.node.label, 'from-hook');
    } finally {
      await d.stop();
    }
  });

  it('workspace/didChangeConfiguration switches the summarizer of the running daemon', async () => {
    const fast = new FakeOpenAI({
      chunks: ['## Goal\nShip.\n', '## Constraints & Preferences\n- none\n', '## Progress\n### Done\n- [x] a\n', '### In Progress\n- [ ] b\n', '### Blocked\n- none\n', '## Key Decisions\n- none\n', '## Next Steps\n1. c\n', '## Critical Context\n- none\n'],
      intervalMs: 1,
    });
    const baseUrl = await fast.start();
    const d = await startDaemon({ initializationOptions: initializationOptions(readConfig(() => undefined)) as unknown as Record<string, unknown> });
    try {
      const cfg = readConfig((key) => ({ summarizer: { backend: 'openai', baseUrl, model: 'switched-model', apiKeyEnv: 'NO_SUCH_KEY_VAR' } })[key]);
      await d.connection.sendNotification('workspace/didChangeConfiguration', didChangeConfigurationParams(cfg));
      const info = await d.client.open(fixtureCopy());
      const result = await d.client.compact({ sessionId: info.sessionId });
      assert.equal(fast.requests.length >= 1, true);
      assert.equal(fast.requests[0].body.model, 'switched-model');
      assert.match(result.summary, /## Goal\nShip\./);
    } finally {
      await d.stop();
      await fast.stop();
    }
  });
});

describe('real daemon: the panel keeps its session through daemons that die', { timeout: 120_000 }, () => {
  it('opens the file again on the next daemon after one died while reopening it', async () => {
    const file = writeLinearSession(tempDir(), 6);
    const [first, second, third] = await Promise.all([startDaemon(), startDaemon(), startDaemon()]);
    const view = new SessionView();
    try {
      await view.attach(first.client);
      await view.open(file);
      view.detach(); // the first daemon is gone; the editor starts another
      // ...which dies while the session is being opened on it: stopped, it takes the open request
      // without answering; then its connection goes, as the language client disposes a closed
      // one, which fails the open.
      const stdin = second.proc.stdin as Socket;
      const written = stdin.bytesWritten;
      second.proc.kill('SIGSTOP');
      const reopening = view.attach(second.client);
      while (stdin.bytesWritten === written) await new Promise((resolve) => setTimeout(resolve, 10));
      second.connection.dispose();
      await assert.rejects(reopening);
      const exited = new Promise((resolve) => second.proc.once('exit', resolve));
      second.proc.kill('SIGKILL');
      await exited;
      view.detach();
      await view.attach(third.client);
      assert.equal(view.path, file);
      assert.equal(view.snapshot?.path, file);
      assert.equal(view.snapshot?.info.entryCount, 6);
    } finally {
      view.dispose();
      await Promise.all([first.stop(), second.stop(), third.stop()]);
    }
  });
});
