// The side panel: elements from core/treeModel rendered as TreeItems. No logic beyond presentation.
import * as vscode from 'vscode';
import type { SessionSnapshot, SessionView } from '../core/sessionView';
import { branchText, compactionFigures, hasSummaryDocument, kindInfo, moreText, pathMarker, rowContextValue, rowText, summaryNodeTitle } from '../core/treeModel';
import type { BranchGroup, MoreRows, Row, TreeElement } from '../core/treeModel';
import type { ServerManager } from '../server';

/** The argument entry commands receive from the tree. */
export interface EntryRef {
  readonly sessionId: string;
  readonly row: Row;
}

/** A branch group of the tree (no commands act on it). */
export interface BranchRef {
  readonly sessionId: string;
  readonly group: BranchGroup;
}

/** "Earlier entries…": loads one more page of a list when activated. */
export interface MoreRef {
  readonly sessionId: string;
  readonly more: MoreRows;
}

export type TreeRef = EntryRef | BranchRef | MoreRef;

/** The entry a command was invoked on, if it was invoked on an entry. */
export function entryOf(ref: unknown): Row | undefined {
  return typeof ref === 'object' && ref !== null && 'row' in ref ? (ref as EntryRef).row : undefined;
}

export class SessionTreeProvider implements vscode.TreeDataProvider<TreeRef>, vscode.Disposable {
  private readonly changeEmitter = new vscode.EventEmitter<TreeRef | undefined | void>();
  readonly onDidChangeTreeData = this.changeEmitter.event;
  private readonly disposables: vscode.Disposable[] = [];
  private readonly refs = new Map<string, TreeRef>();
  private lastLeaf: string | null | undefined;
  readonly view: vscode.TreeView<TreeRef>;

  constructor(
    private readonly session: SessionView,
    private readonly server: ServerManager,
  ) {
    this.view = vscode.window.createTreeView('compactd.sessionTree', {
      treeDataProvider: this,
      showCollapseAll: true,
    });
    this.disposables.push(this.view);
    const sub = session.onDidUpdate((snap) => this.update(snap));
    const statusSub = server.onDidChangeStatus(() => {
      this.update(this.session.snapshot);
    });
    this.disposables.push({ dispose: () => sub.dispose() }, statusSub);
  }

  private update(snap: SessionSnapshot | undefined): void {
    this.refs.clear();
    void vscode.commands.executeCommand('setContext', 'compactd.sessionOpen', snap !== undefined);
    const status = this.server.status;
    if (status.state === 'failed') {
      this.view.description = 'server not running';
      this.view.message = `The compactd server is not running: ${status.message} Run "compactd: Restart Server" after changing it.`;
    } else if (snap === undefined) {
      this.view.description = undefined;
      this.view.message = status.state === 'starting' ? 'Starting the compactd server…' : undefined;
    } else {
      const name = snap.info.name ?? snap.path.split(/[\\/]/).pop();
      this.view.description = `${name ?? ''} · ${snap.model.entryCount} entries`;
      const warnings = snap.info.warnings ?? [];
      this.view.message =
        warnings.length > 0 ? `${warnings.length} malformed line(s) skipped while loading (first: line ${warnings[0].line}).` : undefined;
    }
    this.changeEmitter.fire();
    // Follow the leaf: whenever it moves (navigate, compact, an agent appending), show it.
    const leaf = snap?.model.leafId;
    if (snap !== undefined && leaf !== this.lastLeaf && this.view.visible) {
      void this.revealLeaf().catch(() => undefined);
    }
    this.lastLeaf = leaf;
  }

  private ref(el: TreeElement): TreeRef {
    const sessionId = this.session.sessionId ?? '';
    const known = this.refs.get(el.id);
    if (known !== undefined && SessionTreeProvider.elementOf(known) === el) return known;
    const ref: TreeRef =
      el.type === 'entry' ? { sessionId, row: el } : el.type === 'branch' ? { sessionId, group: el } : { sessionId, more: el };
    this.refs.set(el.id, ref);
    return ref;
  }

  private static elementOf(ref: TreeRef): TreeElement {
    return 'row' in ref ? ref.row : 'group' in ref ? ref.group : ref.more;
  }

  getChildren(element?: TreeRef): TreeRef[] | Promise<TreeRef[]> {
    const id = element === undefined ? undefined : SessionTreeProvider.elementOf(element).id;
    const children = (): TreeRef[] => this.session.snapshot?.model.childrenOf(id).map((el) => this.ref(el)) ?? [];
    // A branch's entries are fetched the first time its group is expanded; everything else is
    // answered at once (the view then updates in the same tick as the model).
    if (id !== undefined && this.session.snapshot?.model.needsLoad(id) !== undefined) {
      return this.session.loadBranch(id).then(children);
    }
    return children();
  }

  getParent(element: TreeRef): TreeRef | undefined {
    const model = this.session.snapshot?.model;
    const parentId = SessionTreeProvider.elementOf(element).parentRowId;
    if (model === undefined || parentId === undefined) return undefined;
    const parent = model.elements.get(parentId);
    return parent ? this.ref(parent) : undefined;
  }

  getTreeItem(element: TreeRef): vscode.TreeItem {
    const el = SessionTreeProvider.elementOf(element);
    if (el.type === 'more') {
      const text = moreText(el);
      const item = new vscode.TreeItem(text.label, vscode.TreeItemCollapsibleState.None);
      item.id = `${element.sessionId}:${el.id}`;
      item.description = text.description;
      item.contextValue = 'more';
      item.iconPath = new vscode.ThemeIcon(el.direction === 'before' ? 'fold-up' : 'fold-down');
      item.command = { command: 'compactd.loadMore', title: 'Load More Entries', arguments: [element] };
      return item;
    }
    // Nothing starts expanded: the path to the leaf is the flat top level, and groups hold the
    // other branches (opened on demand).
    const expandable = el.type === 'branch' || el.isBranchPoint;
    const state = expandable ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None;
    if (el.type === 'branch') {
      const text = branchText(el);
      const item = new vscode.TreeItem(text.label, state);
      item.id = `${element.sessionId}:${el.id}`;
      item.description = text.description;
      item.contextValue = 'branch';
      item.iconPath = new vscode.ThemeIcon('git-branch');
      item.tooltip = `${text.label}\n\nBranch ${el.index + 1} of ${el.count} from the entry above; ${el.entryCount.toLocaleString('en-US')} entries. Expand to list them.`;
      return item;
    }
    const row = el;
    const text = rowText(row);
    const item = new vscode.TreeItem(text.label, state);
    item.id = `${element.sessionId}:${row.id}`;
    item.description = text.description;
    item.contextValue = rowContextValue(row);
    const marker = pathMarker(row.node);
    const color =
      marker === 'leaf' ? new vscode.ThemeColor('charts.green') : marker === 'path' ? new vscode.ThemeColor('charts.blue') : undefined;
    item.iconPath = new vscode.ThemeIcon(marker === 'leaf' ? 'debug-stackframe' : kindInfo(row.node.kind).icon, color);
    item.tooltip = tooltip(row);
    if (hasSummaryDocument(row.node.kind)) {
      item.command = { command: 'compactd.showEntry', title: 'Show Summary', arguments: [element] };
    }
    return item;
  }

  /** Select the row that shows the current leaf: a top-level row, so nothing above it needs
   * expanding (revealing through collapsed ancestors is what logged "No tree item with id"). */
  async revealLeaf(): Promise<void> {
    const snap = this.session.snapshot;
    const rowId = snap?.model.leafRowId;
    if (snap === undefined || rowId == null) return;
    const row = snap.model.byId.get(rowId);
    if (row === undefined) return;
    await this.view.reveal(this.ref(row), { select: true, focus: false });
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
    this.changeEmitter.dispose();
  }
}

function tooltip(row: Row): vscode.MarkdownString {
  const n = row.node;
  const md = new vscode.MarkdownString(undefined, true);
  md.appendMarkdown(`**${escapeMd(kindInfo(n.kind).title)}**`);
  if (n.isLeaf) md.appendMarkdown(' — current leaf');
  else if (n.onLeafPath) md.appendMarkdown(' — on the path to the leaf');
  md.appendMarkdown('\n\n');
  if (n.label) md.appendMarkdown(`Label: **${escapeMd(n.label)}**\n\n`);
  if (n.timestamp) md.appendMarkdown(`${escapeMd(formatDate(n.timestamp))}\n\n`);
  if (row.isBranchPoint) {
    md.appendMarkdown(row.depth === 0
      ? `Branch point: the path goes on below; expand for the ${row.otherBranches} other branch(es).\n\n`
      : `Branch point: expand for its ${row.otherBranches} branches.\n\n`);
  }
  if (n.contextEdit === 'omitted') md.appendMarkdown('A later context edit takes this message out of the model\'s context.\n\n');
  if (n.contextEdit === 'replaced') md.appendMarkdown('A later context edit replaces this message\'s text in the model\'s context.\n\n');
  const title = summaryNodeTitle(n);
  if (title !== undefined) md.appendMarkdown(`${escapeMd(title)}\n\n`);
  if (n.kind === 'compaction') {
    const figures = compactionFigures(n);
    if (n.contextBasis === 'estimate' && figures !== undefined) {
      md.appendMarkdown('Both figures are characters ÷ 4 estimates of the context just before and just after the compaction');
      if (typeof n.tokensBefore === 'number') md.appendMarkdown(` (the entry records ${n.tokensBefore.toLocaleString('en-US')} tokens before, from the provider's usage)`);
      md.appendMarkdown('.\n\n');
    } else if (n.contextBasis === 'recorded') {
      md.appendMarkdown('Both figures as the program that wrote the entry recorded them.\n\n');
    }
    if (n.contextShrank === false) md.appendMarkdown('**The context did not get smaller.**\n\n');
    if (typeof n.compactionWarning === 'string') md.appendMarkdown(`Warning recorded: ${escapeMd(n.compactionWarning)}\n\n`);
  }
  if (n.preview) md.appendText(n.preview);
  return md;
}

/** ISO timestamps (and epoch milliseconds) as a local date and time. */
function formatDate(ts: string): string {
  const d = new Date(/^\d+$/.test(ts) ? Number(ts) : ts);
  return Number.isNaN(d.getTime()) ? ts : d.toLocaleString();
}

function escapeMd(s: string): string {
  return s.replace(/[\\`*_{}[\]()#+\-.!|<>]/g, '\\$&');
}
