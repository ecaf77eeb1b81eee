// The side panel: rows from core/treeModel rendered as TreeItems. No logic beyond presentation.
import * as vscode from 'vscode';
import type { SessionSnapshot, SessionView } from '../core/sessionView';
import { ancestorsOf, containsLeafPath, hasSummaryDocument, kindInfo, pathMarker, rowContextValue, rowText } from '../core/treeModel';
import type { Row } from '../core/treeModel';

/** The argument tree-item commands receive. */
export interface EntryRef {
  readonly sessionId: string;
  readonly row: Row;
}

export class SessionTreeProvider implements vscode.TreeDataProvider<EntryRef>, vscode.Disposable {
  private readonly changeEmitter = new vscode.EventEmitter<EntryRef | undefined | void>();
  readonly onDidChangeTreeData = this.changeEmitter.event;
  private readonly disposables: vscode.Disposable[] = [];
  private readonly refs = new Map<string, EntryRef>();
  readonly view: vscode.TreeView<EntryRef>;

  constructor(private readonly session: SessionView) {
    this.view = vscode.window.createTreeView('compactd.sessionTree', {
      treeDataProvider: this,
      showCollapseAll: true,
    });
    this.disposables.push(this.view);
    const sub = session.onDidUpdate((snap) => this.update(snap));
    this.disposables.push({ dispose: () => sub.dispose() });
  }

  private update(snap: SessionSnapshot | undefined): void {
    this.refs.clear();
    void vscode.commands.executeCommand('setContext', 'compactd.sessionOpen', snap !== undefined);
    if (snap === undefined) {
      this.view.description = undefined;
      this.view.message = undefined;
    } else {
      const name = snap.info.name ?? snap.path.split(/[\\/]/).pop();
      this.view.description = `${name ?? ''} · ${snap.model.rows.length} entries`;
      const warnings = snap.info.warnings ?? [];
      this.view.message =
        warnings.length > 0 ? `${warnings.length} malformed line(s) skipped while loading (first: line ${warnings[0].line}).` : undefined;
    }
    this.changeEmitter.fire();
  }

  private ref(row: Row): EntryRef {
    const sessionId = this.session.sessionId ?? '';
    let ref = this.refs.get(row.id);
    if (ref === undefined || ref.row !== row) {
      ref = { sessionId, row };
      this.refs.set(row.id, ref);
    }
    return ref;
  }

  getChildren(element?: EntryRef): EntryRef[] {
    const model = this.session.snapshot?.model;
    if (model === undefined) return [];
    return model.childrenOf(element?.row.id).map((row) => this.ref(row));
  }

  getParent(element: EntryRef): EntryRef | undefined {
    const model = this.session.snapshot?.model;
    const parentId = element.row.parentRowId;
    if (model === undefined || parentId === undefined) return undefined;
    const parent = model.byId.get(parentId);
    return parent ? this.ref(parent) : undefined;
  }

  getTreeItem(element: EntryRef): vscode.TreeItem {
    const { row } = element;
    const text = rowText(row);
    const item = new vscode.TreeItem(
      text.label,
      row.isBranchPoint
        ? containsLeafPath(row)
          ? vscode.TreeItemCollapsibleState.Expanded
          : vscode.TreeItemCollapsibleState.Collapsed
        : vscode.TreeItemCollapsibleState.None,
    );
    item.id = `${element.sessionId}:${row.id}`;
    item.description = text.description;
    item.contextValue = rowContextValue(row);
    const marker = pathMarker(row.node);
    const color =
      marker === 'leaf' ? new vscode.ThemeColor('charts.green') : marker === 'path' ? new vscode.ThemeColor('charts.blue') : undefined;
    item.iconPath = new vscode.ThemeIcon(kindInfo(row.node.kind).icon, color);
    item.tooltip = tooltip(row);
    if (hasSummaryDocument(row.node.kind)) {
      item.command = { command: 'compactd.showEntry', title: 'Show Summary', arguments: [element] };
    }
    return item;
  }

  /** Select the current leaf, expanding the branch points above it. */
  async revealLeaf(): Promise<void> {
    const snap = this.session.snapshot;
    const leafId = snap?.model.leafId;
    if (snap === undefined || leafId == null) return;
    const row = snap.model.byId.get(leafId);
    if (row === undefined) return;
    // reveal() expands the branch points above (found through getParent); ancestorsOf makes sure
    // their refs exist so getParent returns the same objects the view already knows.
    for (const above of ancestorsOf(snap.model, leafId)) this.ref(above);
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
  md.appendMarkdown(`**${kindInfo(n.kind).title}** \`${n.id}\``);
  if (n.isLeaf) md.appendMarkdown(' — current leaf');
  else if (n.onLeafPath) md.appendMarkdown(' — on the path to the leaf');
  md.appendMarkdown('\n\n');
  if (n.label) md.appendMarkdown(`Label: **${escapeMd(n.label)}**\n\n`);
  if (n.timestamp) md.appendMarkdown(`${n.timestamp}\n\n`);
  if (row.isBranchPoint) md.appendMarkdown(`Branch point: ${n.children.length} branches\n\n`);
  if (n.preview) md.appendText(n.preview);
  return md;
}

function escapeMd(s: string): string {
  return s.replace(/[\\`*_{}[\]()#+\-.!|<>]/g, '\\$&');
}
