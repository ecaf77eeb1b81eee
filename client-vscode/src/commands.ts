// The commands: gather input (pickers, input boxes), call the daemon, show the answer.
// Every decision about sessions is the daemon's; these functions only route.
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { OperationRegistry } from './core/operation';
import type { CompactdClient } from './core/protocolClient';
import { errorCode, errorMessage } from './core/protocolClient';
import { ErrorCodes } from './core/protocol';
import { entryMarkdown, formatTokens, prepareCompactionMarkdown, tokenStatsMarkdown } from './core/render';
import { parseSessionFileName, sessionDirForCwd } from './core/sessionPaths';
import type { SessionView } from './core/sessionView';
import { compactionFigures, hasSummaryDocument, rowText } from './core/treeModel';
import type { Row } from './core/treeModel';
import { DaemonStartError } from './server';
import type { ServerManager } from './server';
import type { MarkdownDocuments } from './views/documents';
import { runWithProgress } from './views/progress';
import { entryOf } from './views/sessionTree';
import type { SessionTreeProvider, TreeRef } from './views/sessionTree';

export interface CommandDeps {
  server: ServerManager;
  session: SessionView;
  tree: SessionTreeProvider;
  docs: MarkdownDocuments;
  ops: OperationRegistry;
  output: vscode.LogOutputChannel;
}

export function registerCommands(deps: CommandDeps): vscode.Disposable[] {
  const c = new Commands(deps);
  const reg = <A extends unknown[]>(id: string, fn: (...args: A) => unknown): vscode.Disposable =>
    vscode.commands.registerCommand(id, async (...args: A) => {
      try {
        await fn(...args);
      } catch (error) {
        deps.output.error(`${id}: ${errorMessage(error)}`);
        // A daemon that did not start has been reported once, with the setting to change.
        if (!(error instanceof DaemonStartError)) void vscode.window.showErrorMessage(`compactd: ${errorMessage(error)}`);
      }
    });
  return [
    reg('compactd.openSession', () => c.openSession()),
    reg('compactd.openSessionFile', (uri?: vscode.Uri) => c.openSessionFile(uri)),
    reg('compactd.refreshTree', () => c.refreshTree()),
    reg('compactd.loadMore', (ref?: TreeRef) => c.loadMore(ref)),
    reg('compactd.revealLeaf', () => c.revealLeaf()),
    reg('compactd.compact', () => c.compact()),
    reg('compactd.prepareCompaction', (ref?: TreeRef) => c.prepareCompaction(ref)),
    reg('compactd.navigate', (ref?: TreeRef) => c.navigate(ref)),
    reg('compactd.setLabel', (ref?: TreeRef) => c.setLabel(ref)),
    reg('compactd.clearLabel', (ref?: TreeRef) => c.clearLabel(ref)),
    reg('compactd.fork', (ref?: TreeRef) => c.fork(ref)),
    reg('compactd.prune', () => c.prune()),
    reg('compactd.showEntry', (ref?: TreeRef) => c.showEntry(ref)),
    reg('compactd.showTokenStats', () => c.showTokenStats()),
    reg('compactd.cancelOperation', () => c.cancelOperation()),
    reg('compactd.abortSession', () => c.abortSession()),
    reg('compactd.restartServer', () => c.restartServer()),
    reg('compactd.showOutput', () => c.showOutput()),
  ];
}

class Commands {
  constructor(private readonly d: CommandDeps) {}

  // --- opening --------------------------------------------------------------------------------

  async openSession(): Promise<void> {
    const client = await this.d.server.ensureStarted();
    const file = await pickSessionFile(client, this.d.output);
    if (file !== undefined) await this.openPath(file);
  }

  async openSessionFile(uri?: vscode.Uri): Promise<void> {
    const target = uri ?? vscode.window.activeTextEditor?.document.uri;
    if (target?.scheme !== 'file') return this.openSession();
    await this.openPath(target.fsPath);
  }

  private async openPath(file: string): Promise<void> {
    await this.d.server.ensureStarted();
    const snap = await this.d.session.open(file);
    await vscode.commands.executeCommand('compactd.sessionTree.focus');
    await this.d.tree.revealLeaf();
    const warnings = snap.info.warnings ?? [];
    if (warnings.length > 0) {
      void vscode.window.showWarningMessage(
        `compactd: ${warnings.length} malformed line(s) skipped in ${path.basename(file)} (first: line ${warnings[0].line}: ${warnings[0].message}).`,
      );
    }
  }

  /** "Earlier entries…" in the tree: one more page of that list. */
  async loadMore(ref?: TreeRef): Promise<void> {
    if (ref !== undefined && 'more' in ref) await this.d.session.loadMore(ref.more);
  }

  async refreshTree(): Promise<void> {
    await this.d.session.refresh();
  }

  async revealLeaf(): Promise<void> {
    await this.d.tree.revealLeaf();
  }

  // --- compaction -----------------------------------------------------------------------------

  async compact(): Promise<void> {
    const { client, sessionId } = this.requireSession();
    const instructions = await vscode.window.showInputBox({
      title: 'Compact now',
      prompt: 'Optional: what the summary should focus on (Enter for the default summary, Escape to cancel)',
      placeHolder: 'e.g. keep the exact error messages of the failing tests',
    });
    if (instructions === undefined) return;
    const params = { sessionId, ...(instructions.trim() !== '' ? { customInstructions: instructions.trim() } : {}) };
    const outcome = await runWithProgress(this.d.ops, 'Compacting session', (token, onProgress) =>
      client.compact(params, { token, onProgress }),
    );
    if (outcome.outcome === 'cancelled') {
      void vscode.window.showInformationMessage('Compaction cancelled; the session is unchanged.');
    } else if (outcome.outcome === 'failed') {
      const code = errorCode(outcome.error);
      if (code === ErrorCodes.nothingToCompact || code === ErrorCodes.cancelledByHook) {
        void vscode.window.showInformationMessage(`compactd: ${outcome.message}`);
      } else {
        void vscode.window.showErrorMessage(`compactd: ${outcome.message}`);
      }
    } else {
      const r = outcome.value;
      for (const w of r.warnings ?? []) void vscode.window.showWarningMessage(`compactd: ${w}`);
      await this.showLeaf();
      // Like with like: the new compaction node's figures (estimates before and after, or the
      // writer's recorded ones), from the tree the refresh just loaded.
      const node = this.d.session.snapshot?.model.byId.get(r.entryId)?.node;
      const figures = (node !== undefined ? compactionFigures(node) : undefined) ?? `about ${formatTokens(r.estimatedTokensAfter)} tokens after`;
      if (node?.contextShrank === false) {
        void vscode.window.showWarningMessage(`compactd: the compaction did not make the context smaller (${figures}): the summary is longer than the messages it replaced.`);
      }
      const choice = await vscode.window.showInformationMessage(`Session compacted (${figures}).`, 'Show Summary');
      if (choice === 'Show Summary') await this.showEntryById(sessionId, r.entryId);
    }
  }

  async prepareCompaction(ref?: TreeRef): Promise<void> {
    const { client, sessionId } = this.requireSession();
    const leafId = entryOf(ref)?.id;
    // The dry-run document shows the conversation text: ask for it.
    const result = await client.prepareCompaction({ sessionId, includeText: true, ...(leafId !== undefined ? { leafId } : {}) });
    const where = leafId !== undefined && leafId !== this.d.session.snapshot?.model.leafId ? `at ${leafId}` : 'at the current leaf';
    await this.d.docs.show(`compaction-dry-run-${sessionId}`, prepareCompactionMarkdown(result, where));
  }

  // --- navigation -----------------------------------------------------------------------------

  async navigate(ref?: TreeRef): Promise<void> {
    const { client, sessionId } = this.requireSession();
    const row = entryOf(ref) ?? (await this.pickEntry('Navigate to which entry?'));
    if (row === undefined) return;
    if (row.node.isLeaf) {
      void vscode.window.showInformationMessage('That entry is already the current leaf.');
      return;
    }
    type Choice = vscode.QuickPickItem & { mode: 'plain' | 'summary' | 'custom' };
    const choice = await vscode.window.showQuickPick<Choice>(
      [
        { label: 'No summary', description: 'just move the leaf', mode: 'plain' },
        { label: 'Summarize', description: 'summarize the branch you leave', mode: 'summary' },
        { label: 'Summarize with custom instructions…', description: 'focus the summary', mode: 'custom' },
      ],
      { title: `Navigate to ${rowText(row).label}`, placeHolder: 'Keep a summary of the branch you are leaving?' },
    );
    if (choice === undefined) return;
    let customInstructions: string | undefined;
    if (choice.mode === 'custom') {
      customInstructions = await vscode.window.showInputBox({
        title: 'Branch summary instructions',
        prompt: 'What should the summary of the branch you leave focus on?',
      });
      if (customInstructions === undefined) return;
    }
    const params = {
      sessionId,
      targetId: row.id,
      summarize: choice.mode !== 'plain',
      ...(customInstructions !== undefined && customInstructions.trim() !== '' ? { customInstructions: customInstructions.trim() } : {}),
    };
    let result;
    if (params.summarize) {
      const outcome = await runWithProgress(this.d.ops, 'Summarizing the branch', (token, onProgress) =>
        client.navigate(params, { token, onProgress }),
      );
      if (outcome.outcome === 'cancelled') {
        void vscode.window.showInformationMessage('Navigation cancelled; the session is unchanged.');
        return;
      }
      if (outcome.outcome === 'failed') {
        void vscode.window.showErrorMessage(`compactd: ${outcome.message}`);
        return;
      }
      result = outcome.value;
    } else {
      result = await client.navigate(params);
    }
    if (result.cancelled) {
      void vscode.window.showInformationMessage(
        result.aborted ? 'Navigation cancelled; the session is unchanged.' : 'Navigation was cancelled by an extension hook.',
      );
      return;
    }
    await this.showLeaf();
    // A user message as target: the leaf moves to its parent and its text comes back for re-sending.
    if (typeof result.editorText === 'string' && result.editorText !== '') {
      const doc = await vscode.workspace.openTextDocument({ content: result.editorText, language: 'markdown' });
      await vscode.window.showTextDocument(doc);
    }
    if (typeof result.summaryEntryId === 'string') {
      const choice2 = await vscode.window.showInformationMessage('Moved; the branch you left was summarized.', 'Show Summary');
      if (choice2 === 'Show Summary') await this.showEntryById(sessionId, result.summaryEntryId);
    }
  }

  // --- labels, fork, prune --------------------------------------------------------------------

  async setLabel(ref?: TreeRef): Promise<void> {
    const { client, sessionId } = this.requireSession();
    const row = entryOf(ref) ?? (await this.pickEntry('Label which entry?'));
    if (row === undefined) return;
    const label = await vscode.window.showInputBox({
      title: `Label: ${rowText(row).label.slice(0, 80)}`,
      value: row.node.label ?? '',
      prompt: 'A short name for this point of the session (empty clears the label)',
    });
    if (label === undefined) return;
    await client.label({ sessionId, targetId: row.id, label: label.trim() === '' ? null : label.trim() });
  }

  async clearLabel(ref?: TreeRef): Promise<void> {
    const { client, sessionId } = this.requireSession();
    const row = entryOf(ref) ?? (await this.pickEntry('Clear the label of which entry?', (r) => Boolean(r.node.label)));
    if (row === undefined) return;
    await client.label({ sessionId, targetId: row.id, label: null });
  }

  async fork(ref?: TreeRef): Promise<void> {
    const { client, sessionId } = this.requireSession();
    const leafId = entryOf(ref)?.id;
    const result = await client.fork({ sessionId, ...(leafId !== undefined ? { leafId } : {}) });
    await this.showLeaf();
    const where = typeof result.path === 'string' ? result.path : '(in memory)';
    const choice = await vscode.window.showInformationMessage(`Forked into ${where}`, 'Open in Panel');
    if (choice === 'Open in Panel' && typeof result.path === 'string') await this.openPath(result.path);
  }

  async prune(): Promise<void> {
    const { client, sessionId } = this.requireSession();
    const plan = await client.prune(sessionId, true);
    if (!plan.prunedCount) {
      void vscode.window.showInformationMessage('Nothing to prune: old tool outputs are protected or would save too little.');
      return;
    }
    const go = await vscode.window.showWarningMessage(
      `Prune ${plan.prunedCount} old tool output(s), saving about ${formatTokens(plan.tokensSaved)} tokens? ` +
        'The originals are kept in a sidecar archive next to the session file.',
      { modal: true },
      'Prune',
    );
    if (go !== 'Prune') return;
    const done = await client.prune(sessionId, false);
    await this.showLeaf();
    void vscode.window.showInformationMessage(`Pruned ${done.prunedCount} tool output(s), about ${formatTokens(done.tokensSaved)} tokens.`);
  }

  // --- documents ------------------------------------------------------------------------------

  async showEntry(ref?: TreeRef): Promise<void> {
    const { sessionId } = this.requireSession();
    const row = entryOf(ref) ?? (await this.pickEntry('Show which entry?', (r) => hasSummaryDocument(r.node.kind)));
    if (row === undefined) return;
    await this.showEntryById(sessionId, row.id);
  }

  private async showEntryById(sessionId: string, entryId: string): Promise<void> {
    const { client } = this.requireSession();
    const { entry } = await client.entry(sessionId, entryId);
    await this.d.docs.show(`entry-${entryId}`, entryMarkdown(entry));
  }

  async showTokenStats(): Promise<void> {
    const { client, sessionId } = this.requireSession();
    const stats = await client.tokenStats(sessionId);
    const name = this.d.session.snapshot?.info.name ?? path.basename(this.d.session.path ?? sessionId);
    await this.d.docs.show(`token-stats-${sessionId}`, tokenStatsMarkdown(stats, `Token statistics — ${name}`));
  }

  // --- control --------------------------------------------------------------------------------

  cancelOperation(): void {
    this.d.ops.cancelAll();
  }

  async abortSession(): Promise<void> {
    const { client, sessionId } = this.requireSession();
    await client.abort(sessionId);
  }

  async restartServer(): Promise<void> {
    await this.d.server.restart();
    void vscode.window.setStatusBarMessage('compactd: daemon restarted', 3000);
  }

  showOutput(): void {
    this.d.output.show(true);
  }

  // --- helpers --------------------------------------------------------------------------------

  /** After a change: reload now (not when the notification arrives) and reveal the leaf. */
  private async showLeaf(): Promise<void> {
    await this.d.session.refresh();
    await this.d.tree.revealLeaf();
  }

  private requireSession(): { client: CompactdClient; sessionId: string } {
    const client = this.d.server.running;
    const sessionId = this.d.session.sessionId;
    if (client === undefined || sessionId === undefined) {
      throw new Error('no session is open; use "compactd: Open Session File…" first');
    }
    return { client, sessionId };
  }

  private async pickEntry(title: string, filter: (row: Row) => boolean = () => true): Promise<Row | undefined> {
    const model = this.d.session.snapshot?.model;
    if (model === undefined) return undefined;
    type Item = vscode.QuickPickItem & { row: Row };
    const items: Item[] = model.rows.filter(filter).map((row) => {
      const t = rowText(row);
      return { label: `${'  '.repeat(row.depth)}${t.label}`, description: t.description, detail: row.id, row };
    });
    const picked = await vscode.window.showQuickPick(items, { title, matchOnDescription: true, matchOnDetail: true });
    return picked?.row;
  }
}

/** Pi's session folder for the workspace (the daemon lists and validates the files, newest
 * first), with a Browse… escape hatch that opens a file dialog in the same folder. */
async function pickSessionFile(client: CompactdClient, output: vscode.LogOutputChannel): Promise<string | undefined> {
  const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  let dir = cwd !== undefined ? sessionDirForCwd(cwd) : undefined;
  type Item = vscode.QuickPickItem & { file?: string };
  const items: Item[] = [];
  if (cwd !== undefined) {
    try {
      const listing = await client.listFiles({ cwd });
      dir = listing.dir;
      for (const f of listing.files) {
        // What the session is (its name, else its first request), then when, how big, how long.
        const parsed = parseSessionFileName(f.path);
        const title = f.name ?? f.firstRequest ?? parsed?.sessionId ?? path.basename(f.path);
        const count = typeof f.entryCount === 'number' ? ` · ${f.entryCount.toLocaleString('en-US')} entries` : '';
        items.push({
          label: `${f.open ? '$(circle-filled) ' : ''}${title.length > 80 ? `${title.slice(0, 79)}…` : title}`,
          description: `${new Date(f.modified).toLocaleString()} · ${formatTokens(f.size)}B${count}`,
          detail: f.path,
          file: f.path,
        });
      }
    } catch (error) {
      output.warn(`listing session files: ${errorMessage(error)}`);
    }
  }
  const browse = async (): Promise<string | undefined> => {
    const defaultUri = dir !== undefined && (await exists(dir)) ? vscode.Uri.file(dir) : vscode.workspace.workspaceFolders?.[0]?.uri;
    const picked = await vscode.window.showOpenDialog({
      title: 'Open a Pi session file',
      defaultUri,
      canSelectMany: false,
      openLabel: 'Open Session',
      filters: { 'Pi sessions': ['jsonl'], 'All files': ['*'] },
    });
    return picked?.[0]?.fsPath;
  };
  if (items.length === 0) return browse();
  items.push({ label: '$(folder-opened) Browse…', description: 'pick any session file', alwaysShow: true });
  const choice = await vscode.window.showQuickPick(items, {
    title: 'Open a session',
    placeHolder: dir ? `Sessions in ${dir}` : 'Session files',
    matchOnDetail: true,
  });
  if (choice === undefined) return undefined;
  return choice.file ?? browse();
}

async function exists(p: string): Promise<boolean> {
  return fs.stat(p).then(
    () => true,
    () => false,
  );
}
