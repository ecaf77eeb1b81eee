// The session tree as the side panel shows it, computed from a `session/tree` result.
//
// Like Pi's tree view, a run of entries that each have exactly one child is a flat list: the
// depth only grows below a branch point (a node with two or more children). Every branch of a
// branch point starts one level deeper, its first row marked as the head of branch i of n.
// The panel is a TreeView, so rows are grouped under the branch point they hang from
// (`childrenOf`): a linear session of any length is one list of top-level rows.
import type { NodeKind, TreeNode, TreeResult } from './protocol';

export interface Row {
  readonly id: string;
  readonly node: TreeNode;
  /** 0 for the top-level list; +1 below each branch point. */
  readonly depth: number;
  /** The branch point this row is listed under (undefined at the top level). */
  readonly parentRowId: string | undefined;
  /** Set on the first row of each branch below a branch point. */
  readonly branch: { readonly index: number; readonly count: number } | undefined;
  /** True when the node has two or more children: its branches are listed under it. */
  readonly isBranchPoint: boolean;
}

export interface TreeModel {
  readonly leafId: string | null;
  /** Rows in display order (depth first, as Pi lists them). */
  readonly rows: readonly Row[];
  readonly byId: ReadonlyMap<string, Row>;
  /** Rows listed directly under a branch point, or the top-level list for `undefined`. */
  childrenOf(rowId: string | undefined): readonly Row[];
}

export function buildTreeModel(tree: TreeResult): TreeModel {
  const nodes = new Map<string, TreeNode>();
  for (const n of tree.nodes) nodes.set(n.id, n);
  const childIds = new Set<string>();
  for (const n of tree.nodes) for (const c of n.children) childIds.add(c);
  // Roots: nodes nobody lists as a child (normally the one entry with parentId null; orphans
  // whose parent is missing from the file also start a top-level run, as in Pi).
  const roots = tree.nodes.filter((n) => !childIds.has(n.id)).map((n) => n.id);

  const rows: Row[] = [];
  const byId = new Map<string, Row>();
  const groups = new Map<string | undefined, Row[]>();
  groups.set(undefined, []);

  type Frame = { id: string; depth: number; parentRowId: string | undefined; branch: Row['branch'] };
  // Explicit stack: sessions can be 100k entries deep, far beyond the JS call stack.
  const stack: Frame[] = [];
  const pushChildren = (ids: readonly string[], frame: Omit<Frame, 'id'>[]): void => {
    for (let i = ids.length - 1; i >= 0; i--) stack.push({ id: ids[i], ...frame[i] });
  };
  pushChildren(
    roots,
    roots.map(() => ({ depth: 0, parentRowId: undefined, branch: undefined })),
  );
  const seen = new Set<string>();
  let nextUnseen = 0;
  for (;;) {
    if (stack.length === 0) {
      // Nodes unreachable from a root (only possible in a broken file: a parent cycle) still
      // get a top-level run, so nothing in the file is hidden.
      while (nextUnseen < tree.nodes.length && seen.has(tree.nodes[nextUnseen].id)) nextUnseen++;
      if (nextUnseen >= tree.nodes.length) break;
      stack.push({ id: tree.nodes[nextUnseen].id, depth: 0, parentRowId: undefined, branch: undefined });
    }
    const frame = stack.pop()!;
    const node = nodes.get(frame.id);
    if (node === undefined || seen.has(frame.id)) continue; // dangling child id or a cycle
    seen.add(frame.id);
    const children = node.children.filter((c) => nodes.has(c) && !seen.has(c));
    const row: Row = {
      id: node.id,
      node,
      depth: frame.depth,
      parentRowId: frame.parentRowId,
      branch: frame.branch,
      isBranchPoint: children.length > 1,
    };
    rows.push(row);
    byId.set(row.id, row);
    groups.get(frame.parentRowId)!.push(row);
    if (children.length === 1) {
      // A single child continues the same list.
      stack.push({ id: children[0], depth: frame.depth, parentRowId: frame.parentRowId, branch: undefined });
    } else if (children.length > 1) {
      groups.set(row.id, []);
      pushChildren(
        children,
        children.map((_, index) => ({
          depth: frame.depth + 1,
          parentRowId: row.id,
          branch: { index, count: children.length },
        })),
      );
    }
  }
  return {
    leafId: tree.leafId,
    rows,
    byId,
    childrenOf: (rowId) => groups.get(rowId) ?? [],
  };
}

/** The chain of branch points above a row, outermost first (what a TreeView must expand to reveal it). */
export function ancestorsOf(model: TreeModel, rowId: string): Row[] {
  const out: Row[] = [];
  let current = model.byId.get(rowId)?.parentRowId;
  while (current !== undefined) {
    const row = model.byId.get(current);
    if (row === undefined) break;
    out.push(row);
    current = row.parentRowId;
  }
  return out.reverse();
}

/** Does the leaf live somewhere below this branch point? Such branch points start expanded. */
export function containsLeafPath(row: Row): boolean {
  return row.isBranchPoint && row.node.onLeafPath;
}

export interface KindInfo {
  /** Short word shown before the preview. */
  readonly title: string;
  /** A codicon name (rendered by the VS Code glue as a ThemeIcon). */
  readonly icon: string;
}

const KINDS: Record<NodeKind, KindInfo> = {
  user: { title: 'user', icon: 'account' },
  assistant: { title: 'assistant', icon: 'hubot' },
  toolResult: { title: 'tool', icon: 'tools' },
  bash: { title: 'bash', icon: 'terminal' },
  compaction: { title: 'compaction', icon: 'fold' },
  branchSummary: { title: 'branch summary', icon: 'git-merge' },
  customMessage: { title: 'custom message', icon: 'extensions' },
  custom: { title: 'custom', icon: 'symbol-misc' },
  label: { title: 'label', icon: 'tag' },
  modelChange: { title: 'model', icon: 'server-environment' },
  thinkingLevel: { title: 'thinking', icon: 'lightbulb' },
  sessionInfo: { title: 'session', icon: 'info' },
  developer: { title: 'developer', icon: 'gear' },
};

export function kindInfo(kind: string): KindInfo {
  return (KINDS as Record<string, KindInfo | undefined>)[kind] ?? { title: kind, icon: 'circle-outline' };
}

/** Kinds whose full text is a summary worth opening as a document on click. */
export function hasSummaryDocument(kind: string): boolean {
  return kind === 'compaction' || kind === 'branchSummary';
}

export type PathMarker = 'leaf' | 'path' | 'off';

export function pathMarker(node: TreeNode): PathMarker {
  if (node.isLeaf) return 'leaf';
  return node.onLeafPath ? 'path' : 'off';
}

/** Collapse whitespace and cut to `max` characters (the daemon already sends one line; this
 * keeps the panel safe with any input). */
export function oneLine(text: string, max = 120): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length <= max ? line : `${line.slice(0, max - 1)}…`;
}

export interface RowText {
  readonly label: string;
  readonly description: string;
}

/** What a row displays: the preview as the label; kind, entry label, branch and leaf marks beside it. */
export function rowText(row: Row): RowText {
  const n = row.node;
  const info = kindInfo(n.kind);
  const parts: string[] = [];
  if (n.isLeaf) parts.push('● leaf');
  if (n.label) parts.push(`[${n.label}]`);
  if (row.branch !== undefined) parts.push(`branch ${row.branch.index + 1}/${row.branch.count}`);
  parts.push(info.title);
  const preview = oneLine(n.preview ?? '');
  return { label: preview !== '' ? preview : `(${info.title})`, description: parts.join(' · ') };
}

/** The `contextValue` of a tree item; menus in package.json match on these words. */
export function rowContextValue(row: Row): string {
  const words = ['entry', `kind-${row.node.kind}`];
  if (row.node.label) words.push('labelled');
  if (row.node.isLeaf) words.push('leaf');
  if (hasSummaryDocument(row.node.kind)) words.push('summary');
  return words.join(' ');
}
