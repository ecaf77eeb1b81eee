// The session tree as the side panel shows it (issue 27): indentation that does not grow with the
// number of branch points, so the leaf of a session navigated hundreds of times is readable at the
// default side-bar width.
//
// The daemon splits the tree into *lists*: a run of entries that each have one child, ending at a
// branch point (the top level starts at the roots, every other list at a child of a branch point).
// The panel shows the path to the leaf as ONE flat top-level list: the lists on the path, each up to
// its branch point, then the leaf's list. A branch point on the path is collapsed and holds the
// *other* branches, one group each; a group lists its branch flat, and a branch point at its end
// holds that point's branches the same way. So depth grows only as the user opens alternatives, and
// nothing on the path is ever an ancestor VS Code could pin as a sticky header.
//
//   r, a, b, e, f, i   (the path to the leaf i; b and f are branch points)
//     b > Branch 1 of 2 (group) -> c, d
//     f > Branch 1 of 2 (group) -> g
//
// Label entries are not rows: the label shows on the entry it names (as Pi's tree shows it), and a
// label entry that is the leaf passes the leaf mark to the row before it.
import type { NodeKind, TreeNode, TreeResult, TreeRowNode } from './protocol';
import { formatTokens } from './render';

export interface Row {
  readonly type: 'entry';
  readonly id: string;
  readonly node: TreeNode;
  /** 0 on the path to the leaf; +2 in each alternative branch opened. */
  readonly depth: number;
  /** The branch group this row is listed in (undefined at the top level). */
  readonly parentRowId: string | undefined;
  /** Set on the first row of each branch group. */
  readonly branch: { readonly index: number; readonly count: number } | undefined;
  /** True when branch groups are listed under this row (the other branches, on the path). */
  readonly isBranchPoint: boolean;
  /** How many branches the row's groups hold (the path's own branch not counted). */
  readonly otherBranches: number;
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
  /** The current leaf is in this branch (never, in the path-flat layout: kept for menus). */
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
  /** How many rows of the list it stands for, when the daemon said. */
  readonly count: number | undefined;
}

export type TreeElement = Row | BranchGroup | MoreRows;

export interface TreeModel {
  readonly leafId: string | null;
  /** The row that shows the leaf mark: the leaf, or the row before it when the leaf is a label. */
  readonly leafRowId: string | null;
  /** Entries in the session (the lazy model loads only some of them). */
  readonly entryCount?: number;
  /** Entry rows in display order. */
  readonly rows: readonly Row[];
  readonly byId: ReadonlyMap<string, Row>;
  /** Entry rows and branch groups by id. */
  readonly elements: ReadonlyMap<string, TreeElement>;
  /** What the view lists under an element: a branch point's groups, a group's entries, or the
   * top-level list for `undefined`. */
  childrenOf(id: string | undefined): readonly TreeElement[];
}

export const branchGroupId = (firstEntryId: string): string => `branch:${firstEntryId}`;

/** One list as loaded: all of it (the whole tree) or the pages fetched so far. */
export interface ListState {
  rows: TreeRowNode[];
  hasMoreBefore: boolean;
  hasMoreAfter: boolean;
  moreBefore?: number;
  moreAfter?: number;
}

/** The top level's key among the lists (a branch's key is its first entry id). */
export const TOP = '';
export const keyOf = (branch: string | null): string => branch ?? TOP;
const branchOf = (key: string): string | null => (key === TOP ? null : key);

export interface Layout {
  rows: Row[];
  byId: Map<string, Row>;
  elements: Map<string, TreeElement>;
  kids: Map<string | undefined, TreeElement[]>;
  leafRowId: string | null;
  /** The list each row came from (its key). */
  listOf: Map<string, string>;
}

/** The elements of the panel from the loaded lists and the keys of the lists on the path to the
 * leaf (top level first). Shared by the whole-tree model and the lazy one, so both show the same. */
export function layoutLists(lists: ReadonlyMap<string, ListState>, pathKeys: readonly string[], leafId: string | null): Layout {
  const out: Layout = { rows: [], byId: new Map(), elements: new Map(), kids: new Map(), leafRowId: null, listOf: new Map() };
  const put = (row: Row): void => {
    out.byId.set(row.id, row);
    out.elements.set(row.id, row);
  };
  // One per list and direction at most: the id names the list, so a stretch of the path between
  // two branch points never shows two (tests: lazyTree.test.ts).
  const more = (key: string, direction: 'before' | 'after', cursor: string, parentRowId: string | undefined, depth: number): MoreRows => {
    const state = lists.get(key);
    const count = direction === 'before' ? state?.moreBefore : state?.moreAfter;
    const el: MoreRows = { type: 'more', id: `more:${direction}:${key}`, list: branchOf(key), direction, cursor, parentRowId, depth, count };
    out.elements.set(el.id, el);
    return el;
  };

  // One entry into `into`; `pathChild` is the next path list's key when the row is a branch point
  // on the path (its groups then leave that branch out: it continues below, flat).
  const emit = (node: TreeRowNode, into: TreeElement[], key: string, parentRowId: string | undefined, depth: number,
    info: Row['branch'], pathChild: string | undefined): void => {
    const all = node.children.length > 1 ? node.branches ?? [] : [];
    if (node.kind === 'label' && all.length === 0) {
      // Not a row; a label leaf marks the row before it.
      if (node.id === leafId) {
        for (let i = into.length - 1; i >= 0; i--) {
          const prev = into[i];
          if (prev.type !== 'entry') continue;
          const marked: Row = { ...prev, node: { ...prev.node, isLeaf: true } };
          into[i] = marked;
          out.rows[out.rows.indexOf(prev)] = marked;
          put(marked);
          out.leafRowId = marked.id;
          break;
        }
      }
      return;
    }
    const groups: BranchGroup[] = [];
    all.forEach((b, index) => {
      if (b.first.id === pathChild) return;
      const loaded = lists.get(b.first.id)?.rows[0];
      const first = loaded !== undefined && loaded.id === b.first.id ? plainNode(loaded) : b.first;
      const group: BranchGroup = {
        type: 'branch', id: branchGroupId(b.first.id), parentRowId: node.id, index, count: all.length, first,
        entryCount: b.entryCount, containsLeaf: first.onLeafPath, depth: depth + 1,
      };
      groups.push(group);
      out.elements.set(group.id, group);
    });
    const row: Row = {
      type: 'entry', id: node.id, node: plainNode(node), depth, parentRowId, branch: info,
      isBranchPoint: groups.length > 0, otherBranches: groups.length,
    };
    into.push(row);
    out.rows.push(row);
    put(row);
    out.listOf.set(row.id, key);
    if (node.id === leafId) out.leafRowId = row.id;
    if (groups.length > 0) {
      out.kids.set(row.id, groups);
      for (const g of groups) branchList(g.first.id, g.id, depth + 2, { index: g.index, count: g.count });
    }
  };

  // An alternative branch: its list flat inside its group.
  const branchList = (key: string, groupId: string, depth: number, info: Row['branch']): void => {
    const into: TreeElement[] = [];
    out.kids.set(groupId, into);
    const state = lists.get(key);
    if (state === undefined || state.rows.length === 0) return;
    if (state.hasMoreBefore) into.push(more(key, 'before', state.rows[0].id, groupId, depth));
    state.rows.forEach((node, i) => emit(node, into, key, groupId, depth, i === 0 && !state.hasMoreBefore ? info : undefined, undefined));
    if (state.hasMoreAfter) into.push(more(key, 'after', state.rows.at(-1)!.id, groupId, depth));
  };

  const top: TreeElement[] = [];
  out.kids.set(undefined, top);
  // Rows after the path's branch point in an upper list (only the top level has them: runs of
  // other roots, orphans of a broken file) come after the path, not inside it.
  const trailing: TreeElement[] = [];
  const keys = pathKeys.length > 0 ? pathKeys : [TOP];
  keys.forEach((key, i) => {
    const state = lists.get(key);
    if (state === undefined || state.rows.length === 0) return;
    const next = keys[i + 1];
    if (state.hasMoreBefore) top.push(more(key, 'before', state.rows[0].id, undefined, 0));
    let through = false;
    for (const node of state.rows) {
      if (through) {
        emit(node, trailing, key, undefined, 0, undefined, undefined);
        continue;
      }
      const onward = next !== undefined && node.children.includes(next);
      emit(node, top, key, undefined, 0, undefined, onward ? next : undefined);
      through = onward;
    }
    if (state.hasMoreAfter) (next === undefined ? top : trailing).push(more(key, 'after', state.rows.at(-1)!.id, undefined, 0));
  });
  top.push(...trailing);
  return out;
}

/** A row's node without its branches (they become group elements). */
export function plainNode(node: TreeRowNode): TreeNode {
  if (node.branches === undefined) return node;
  const rest: TreeRowNode = { ...node };
  delete rest.branches;
  return rest;
}

/** The panel's model from the whole tree (`session/tree` without `limit`): the daemon's lists
 * computed here, laid out like the lazy model's pages. */
export function buildTreeModel(tree: TreeResult): TreeModel {
  const nodes = new Map<string, TreeNode>();
  for (const n of tree.nodes) nodes.set(n.id, n);
  const childIds = new Set<string>();
  for (const n of tree.nodes) for (const c of n.children) childIds.add(c);
  const roots = tree.nodes.filter((n) => !childIds.has(n.id)).map((n) => n.id);
  // Depth-first order with dangling ids and cycles removed (explicit stack: sessions can be 100k deep).
  const kids = new Map<string, string[]>();
  const order: string[] = [];
  const seen = new Set<string>();
  const claimed = new Set<string>();
  const starts: string[] = [];
  const walk = (start: string): void => {
    const stack = [start];
    while (stack.length > 0) {
      const id = stack.pop()!;
      if (seen.has(id) || !nodes.has(id)) continue;
      seen.add(id);
      order.push(id);
      // A child listed by two parents (a broken file) belongs to the first one only.
      const children = nodes.get(id)!.children.filter((c) => nodes.has(c) && !seen.has(c) && !claimed.has(c));
      for (const c of children) claimed.add(c);
      kids.set(id, children);
      for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]);
    }
  };
  for (const r of roots) {
    starts.push(r);
    walk(r);
  }
  for (const n of tree.nodes) {
    if (!seen.has(n.id)) {
      starts.push(n.id);
      walk(n.id);
    }
  }
  const size = new Map<string, number>();
  for (let i = order.length - 1; i >= 0; i--) {
    let total = 1;
    for (const c of kids.get(order[i]) ?? []) total += size.get(c) ?? 0;
    size.set(order[i], total);
  }
  const rowNode = (id: string): TreeRowNode => {
    const node = nodes.get(id)!;
    const children = kids.get(id) ?? [];
    const base = { ...node, children };
    return children.length > 1 ? { ...base, branches: children.map((c) => ({ first: nodes.get(c)!, entryCount: size.get(c) ?? 1 })) } : base;
  };
  const lists = new Map<string, ListState>();
  const keyOfNode = new Map<string, string>();
  const run = (start: string, key: string, rows: TreeRowNode[]): void => {
    for (let id: string | undefined = start; id !== undefined; ) {
      rows.push(rowNode(id));
      keyOfNode.set(id, key);
      const children: string[] = kids.get(id) ?? [];
      if (children.length === 1) id = children[0];
      else {
        for (const c of children) {
          const list: TreeRowNode[] = [];
          lists.set(c, { rows: list, hasMoreBefore: false, hasMoreAfter: false });
          run(c, c, list);
        }
        id = undefined;
      }
    }
  };
  const topRows: TreeRowNode[] = [];
  lists.set(TOP, { rows: topRows, hasMoreBefore: false, hasMoreAfter: false });
  for (const s of starts) run(s, TOP, topRows);
  const pathKeys: string[] = [];
  const guard = new Set<string>();
  for (let id: string | null | undefined = tree.leafId; id != null && nodes.has(id) && !guard.has(id); id = nodes.get(id)!.parentId) {
    guard.add(id);
    const key = keyOfNode.get(id);
    if (key !== undefined && pathKeys[0] !== key) pathKeys.unshift(key);
  }
  const layout = layoutLists(lists, pathKeys, tree.leafId);
  return {
    leafId: tree.leafId,
    leafRowId: layout.leafRowId,
    rows: layout.rows,
    byId: layout.byId,
    elements: layout.elements,
    childrenOf: (id) => layout.kids.get(id) ?? [],
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

/** Does the leaf live below this element? Never in the path-flat layout (the leaf is a top-level
 * row); every group and branch point starts collapsed. */
export function containsLeafPath(el: TreeElement): boolean {
  if (el.type === 'more') return false;
  return el.type === 'branch' ? el.containsLeaf : false;
}

/** "459 earlier entries…": each gap of the path says how much it holds, so the gaps between
 * branch points read as different stretches, not as one row repeated. */
export function moreText(el: MoreRows): RowText {
  const word = el.direction === 'before' ? 'earlier' : 'more';
  if (typeof el.count === 'number' && el.count > 0) {
    return { label: `${plural(el.count, `${word} entry…`, `${word} entries…`)}`, description: 'load the next page' };
  }
  return { label: el.direction === 'before' ? 'Earlier entries…' : 'More entries…', description: 'load the next page' };
}

export interface KindInfo {
  /** Short word shown beside the preview. */
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
  custom: { title: 'extension data', icon: 'symbol-misc' },
  label: { title: 'label', icon: 'tag' },
  modelChange: { title: 'model', icon: 'server-environment' },
  thinkingLevel: { title: 'thinking', icon: 'lightbulb' },
  sessionInfo: { title: 'session', icon: 'info' },
  developer: { title: 'developer', icon: 'gear' },
  system: { title: 'system prompt', icon: 'settings' },
  contextEdit: { title: 'context edit', icon: 'edit' },
  usage: { title: 'usage', icon: 'pulse' },
  resetBoundary: { title: 'context cleared', icon: 'clear-all' },
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

const plural = (n: number, one: string, many: string): string => `${n.toLocaleString('en-US')} ${n === 1 ? one : many}`;

/** What a compaction's figures say, of one kind: "about 4.5k → 1.2k tokens (estimates)" or, as
 * oh-my-pi recorded them, "4.5k → 16.6k tokens (recorded)". Undefined without figures. */
export function compactionFigures(n: TreeNode): string | undefined {
  const before = n.contextBefore;
  const after = n.contextAfter;
  if (typeof before === 'number' && typeof after === 'number') {
    return n.contextBasis === 'recorded'
      ? `${formatTokens(before)} → ${formatTokens(after)} tokens (recorded)`
      : `about ${formatTokens(before)} → ${formatTokens(after)} tokens (estimates)`;
  }
  if (typeof n.tokensBefore === 'number') return `${formatTokens(n.tokensBefore)} tokens before`;
  return undefined;
}

/** "Compaction · about 181k → 22.7k tokens (estimates)", "Branch summary · summarizes 12 entries":
 * what the node *is*; its text is one click away (the summary document). Undefined for other kinds. */
export function summaryNodeTitle(n: TreeNode): string | undefined {
  if (n.kind === 'compaction') {
    const method = typeof n.compactionMethod === 'string' ? ` (${n.compactionMethod})` : '';
    const figures = compactionFigures(n);
    const warn = n.contextShrank === false || typeof n.compactionWarning === 'string' ? ' · ⚠ did not shrink' : '';
    return `Compaction${method}${figures !== undefined ? ` · ${figures}` : ''}${warn}`;
  }
  if (n.kind === 'branchSummary') {
    const count = n.summarizedEntries;
    if (typeof count === 'number') return `Branch summary · summarizes ${plural(count, 'entry', 'entries')}`;
    return count === null ? 'Branch summary · of a branch not in this file' : 'Branch summary';
  }
  return undefined;
}

/** Short marks put FIRST on a row, so they survive a narrow side bar: the leaf, the other branches
 * a branch point on the path holds, a Pi 1.6 context edit on its target, the entry's label. */
export function rowMarks(row: Row): string[] {
  const n = row.node;
  const marks: string[] = [];
  if (n.isLeaf) marks.push('● leaf');
  if (row.isBranchPoint) marks.push(row.depth === 0 ? `⎇ ${plural(row.otherBranches, 'other branch', 'other branches')}` : `⎇ ${row.otherBranches} branches`);
  if (n.contextEdit === 'omitted') marks.push('⊘ omitted from context');
  else if (n.contextEdit === 'replaced') marks.push('✎ replaced in context');
  if (n.label) marks.push(`[${n.label}]`);
  return marks;
}

/** What an entry row displays: marks first, then what the entry is or says; the kind beside it. */
export function rowText(row: Row): RowText {
  const n = row.node;
  const info = kindInfo(n.kind);
  const marks = rowMarks(row);
  const title = summaryNodeTitle(n);
  const preview = oneLine(n.preview ?? '');
  const body = title ?? (preview !== '' ? preview : `(${info.title})`);
  return { label: [...marks, body].join(' · '), description: title !== undefined ? '' : info.title };
}

/** "Branch 2 of 3 · 14 entries · user: fix the failing test": which branch, its size, how it starts. */
export function branchText(group: BranchGroup): RowText {
  const first = group.first;
  const start = `${kindInfo(first.kind).title}: ${oneLine(first.preview ?? '', 80) || '(empty)'}`;
  const size = plural(group.entryCount, 'entry', 'entries');
  return { label: `Branch ${group.index + 1} of ${group.count} · ${size} · ${start}`, description: '' };
}

/** The `contextValue` of a tree item; menus in package.json match on these words. */
export function rowContextValue(row: Row): string {
  const words = ['entry', `kind-${row.node.kind}`];
  if (row.node.label) words.push('labelled');
  if (row.node.isLeaf) words.push('leaf');
  if (hasSummaryDocument(row.node.kind)) words.push('summary');
  return words.join(' ');
}
