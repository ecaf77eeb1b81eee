// The session tree as the side panel shows it, computed from a `session/tree` result.
//
// Like Pi's tree view, a run of entries that each have exactly one child is a flat list. A
// branch point (a node with two or more children) lists one collapsible *branch group* per
// child, labelled with which branch it is and what it starts with; a group lists its branch's
// run of entries, flat again, until the next branch point. So two branches never share a list
// and depth grows only below branch points:
//
//   r, a, b            (top level; b is a branch point)
//     Branch 1 of 2    (group) -> c, d
//     Branch 2 of 2    (group) -> e, f, ...
import type { NodeKind, TreeNode, TreeResult } from './protocol';
import { formatTokens } from './render';

export interface Row {
  readonly type: 'entry';
  readonly id: string;
  readonly node: TreeNode;
  /** 0 for the top-level list; +1 below each branch point. */
  readonly depth: number;
  /** The branch group this row is listed in (undefined at the top level). */
  readonly parentRowId: string | undefined;
  /** Set on the first row of each branch below a branch point. */
  readonly branch: { readonly index: number; readonly count: number } | undefined;
  /** True when the node has two or more children: its branch groups are listed under it. */
  readonly isBranchPoint: boolean;
}

/** One branch of a branch point: a collapsible element listing that branch's entries. */
export interface BranchGroup {
  readonly type: 'branch';
  /** `branch:<id of its first entry>`, stable across reloads. */
  readonly id: string;
  /** The branch point's entry id (the group's parent in the view). */
  readonly parentRowId: string;
  readonly index: number;
  readonly count: number;
  /** The branch's first entry. */
  readonly first: TreeNode;
  /** Entries in the branch, its own sub-branches included. */
  readonly entryCount: number;
  /** The current leaf is in this branch. */
  readonly containsLeaf: boolean;
  readonly depth: number;
}

/** "Earlier / more entries…" at the start or end of a list that is only partly loaded (the lazy
 * model, see lazyTree.ts); activating it loads one more page there. */
export interface MoreRows {
  readonly type: 'more';
  /** `more:before:<list>` / `more:after:<list>`. */
  readonly id: string;
  /** The list: a branch's first entry id, or null for the top level. */
  readonly list: string | null;
  readonly direction: 'before' | 'after';
  /** The loaded row the next page continues from. */
  readonly cursor: string;
  readonly parentRowId: string | undefined;
  readonly depth: number;
}

export type TreeElement = Row | BranchGroup | MoreRows;

export interface TreeModel {
  readonly leafId: string | null;
  /** Entries in the session (the lazy model loads only some of them). */
  readonly entryCount?: number;
  /** Entry rows in display order (depth first, as Pi lists them). */
  readonly rows: readonly Row[];
  readonly byId: ReadonlyMap<string, Row>;
  /** Entry rows and branch groups by id. */
  readonly elements: ReadonlyMap<string, TreeElement>;
  /** What the view lists under an element: a branch point's groups, a group's entries, or the
   * top-level list for `undefined`. */
  childrenOf(id: string | undefined): readonly TreeElement[];
}

export const branchGroupId = (firstEntryId: string): string => `branch:${firstEntryId}`;

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
  const groups = new Map<string | undefined, TreeElement[]>();
  groups.set(undefined, []);
  // The children each visited node really has in the view (dangling ids and cycles removed).
  const kids = new Map<string, string[]>();

  type Frame = { id: string; depth: number; parentRowId: string | undefined; branch: Row['branch'] };
  // Explicit stack: sessions can be 100k entries deep, far beyond the JS call stack.
  const stack: Frame[] = [];
  for (let i = roots.length - 1; i >= 0; i--) stack.push({ id: roots[i], depth: 0, parentRowId: undefined, branch: undefined });
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
    kids.set(node.id, children);
    const row: Row = {
      type: 'entry',
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
      for (let index = children.length - 1; index >= 0; index--) {
        const gid = branchGroupId(children[index]);
        groups.set(gid, []);
        stack.push({ id: children[index], depth: frame.depth + 1, parentRowId: gid, branch: { index, count: children.length } });
      }
    }
  }

  // Subtree sizes, children before parents (reverse depth-first order), for the groups' counts.
  const size = new Map<string, number>();
  for (let i = rows.length - 1; i >= 0; i--) {
    let total = 1;
    for (const c of kids.get(rows[i].id) ?? []) total += size.get(c) ?? 0;
    size.set(rows[i].id, total);
  }
  const elements = new Map<string, TreeElement>(byId);
  for (const row of rows) {
    if (!row.isBranchPoint) continue;
    const children = kids.get(row.id)!;
    const list = groups.get(row.id)!;
    children.forEach((childId, index) => {
      const first = byId.get(childId)!;
      const group: BranchGroup = {
        type: 'branch',
        id: branchGroupId(childId),
        parentRowId: row.id,
        index,
        count: children.length,
        first: first.node,
        entryCount: size.get(childId) ?? 1,
        containsLeaf: first.node.onLeafPath,
        depth: row.depth + 1,
      };
      list.push(group);
      elements.set(group.id, group);
    });
  }
  return {
    leafId: tree.leafId,
    rows,
    byId,
    elements,
    childrenOf: (id) => groups.get(id) ?? [],
  };
}

/** The elements above one, outermost first: what a TreeView must expand to reveal it. */
export function ancestorsOf(model: TreeModel, id: string): TreeElement[] {
  const out: TreeElement[] = [];
  let current = model.elements.get(id)?.parentRowId;
  while (current !== undefined) {
    const el = model.elements.get(current);
    if (el === undefined) break;
    out.push(el);
    current = el.parentRowId;
  }
  return out.reverse();
}

/** Does the leaf live below this element? Such branch points and groups start expanded. */
export function containsLeafPath(el: TreeElement): boolean {
  if (el.type === 'more') return false;
  return el.type === 'branch' ? el.containsLeaf : el.isBranchPoint && el.node.onLeafPath;
}

export function moreText(el: MoreRows): RowText {
  return { label: el.direction === 'before' ? 'Earlier entries…' : 'More entries…', description: 'load the next page' };
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

/** "Compaction · 181k → 22.7k tokens", "Branch summary · 12 entries": what the node *is*; its
 * text is one click away (the summary document). Other kinds show their one-line preview. */
export function summaryNodeTitle(n: TreeNode): string | undefined {
  if (n.kind === 'compaction') {
    const before = typeof n.tokensBefore === 'number' ? formatTokens(n.tokensBefore) : undefined;
    const after = typeof n.tokensAfter === 'number' ? formatTokens(n.tokensAfter) : undefined;
    if (before !== undefined && after !== undefined) return `Compaction · ${before} → ${after} tokens`;
    if (before !== undefined) return `Compaction · ${before} tokens before`;
    return 'Compaction';
  }
  if (n.kind === 'branchSummary') {
    const count = n.summarizedEntries;
    return typeof count === 'number' ? `Branch summary · ${count} ${count === 1 ? 'entry' : 'entries'}` : 'Branch summary';
  }
  return undefined;
}

/** What an entry row displays: the preview (or what a summary node is) as the label; kind, entry
 * label and leaf mark beside it. */
export function rowText(row: Row): RowText {
  const n = row.node;
  const info = kindInfo(n.kind);
  const parts: string[] = [];
  if (n.isLeaf) parts.push('● leaf');
  if (n.label) parts.push(`[${n.label}]`);
  const title = summaryNodeTitle(n);
  if (title !== undefined) {
    return { label: title, description: parts.join(' · ') };
  }
  parts.push(info.title);
  const preview = oneLine(n.preview ?? '');
  return { label: preview !== '' ? preview : `(${info.title})`, description: parts.join(' · ') };
}

/** "Branch 2 of 3 · user: fix the failing test" and "14 entries · current leaf here". */
export function branchText(group: BranchGroup): RowText {
  const first = group.first;
  const start = summaryNodeTitle(first) ?? `${kindInfo(first.kind).title}: ${oneLine(first.preview ?? '', 80) || '(empty)'}`;
  const parts = [`${group.entryCount} ${group.entryCount === 1 ? 'entry' : 'entries'}`];
  if (group.containsLeaf) parts.push('● current branch');
  return { label: `Branch ${group.index + 1} of ${group.count} · ${start}`, description: parts.join(' · ') };
}

/** The `contextValue` of a tree item; menus in package.json match on these words. */
export function rowContextValue(row: Row): string {
  const words = ['entry', `kind-${row.node.kind}`];
  if (row.node.label) words.push('labelled');
  if (row.node.isLeaf) words.push('leaf');
  if (hasSummaryDocument(row.node.kind)) words.push('summary');
  return words.join(' ');
}
