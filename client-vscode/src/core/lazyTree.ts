// The side panel's tree loaded lazily from paged `session/tree` answers (protocol.md, "Paged
// tree"): the leaf's screen first, then pages of a list on demand ("Earlier entries…") and a
// branch's list when its group is expanded. The elements are the same as treeModel.ts builds from
// the whole tree (flat runs, one group per branch below a branch point), so the view and its
// labels do not change. `session/didChange` deltas (appended nodes, labels) are applied in place
// when they extend the leaf's list; anything else asks the caller to fetch the leaf's screen again.
import type { DidChangeParams, TreeBranch, TreeListPage, TreeNode, TreePageResult, TreeRowNode } from './protocol';
import { branchGroupId } from './treeModel';
import type { BranchGroup, MoreRows, Row, TreeElement, TreeModel } from './treeModel';

interface ListState {
  rows: TreeRowNode[];
  hasMoreBefore: boolean;
  hasMoreAfter: boolean;
}

const TOP = '';
const keyOf = (branch: string | null): string => branch ?? TOP;

export class LazyTreeModel implements TreeModel {
  private lists = new Map<string, ListState>();
  private _leafId: string | null;
  private _entryCount: number;
  rows: Row[] = [];
  byId = new Map<string, Row>();
  elements = new Map<string, TreeElement>();
  private kids = new Map<string | undefined, TreeElement[]>();

  constructor(screen: TreePageResult) {
    this._leafId = screen.leafId;
    this._entryCount = screen.entryCount;
    for (const page of screen.lists) this.lists.set(keyOf(page.branch), copyPage(page));
    this.rebuild();
  }

  get leafId(): string | null {
    return this._leafId;
  }

  get entryCount(): number {
    return this._entryCount;
  }

  childrenOf(id: string | undefined): readonly TreeElement[] {
    return this.kids.get(id) ?? [];
  }

  /** A branch group whose list has not been fetched yet (expanding it must fetch it first). */
  needsLoad(groupId: string): string | undefined {
    const group = this.elements.get(groupId);
    if (group?.type !== 'branch') return undefined;
    return this.lists.has(group.first.id) ? undefined : group.first.id;
  }

  /** Take one page of a list (from `session/tree` with `branch` and maybe a cursor). */
  addPage(page: TreeListPage, direction: 'before' | 'after' | 'first'): void {
    const key = keyOf(page.branch);
    const known = this.lists.get(key);
    if (known === undefined || direction === 'first') {
      this.lists.set(key, copyPage(page));
    } else if (direction === 'before') {
      known.rows = [...page.rows, ...known.rows];
      known.hasMoreBefore = page.hasMoreBefore;
    } else {
      known.rows = [...known.rows, ...page.rows];
      known.hasMoreAfter = page.hasMoreAfter;
    }
    this.rebuild();
  }

  /** Apply a session/didChange; false when the caller must fetch the leaf's screen again. */
  applyChange(change: DidChangeParams): boolean {
    const nodes = change.nodes;
    if (change.kind !== 'appended' || nodes === undefined) return false;
    if (nodes.length === 0) return true;
    // Appended at the leaf, which ends its loaded list: the new entries continue that list.
    const leaf = this._leafId === null ? undefined : this.byId.get(this._leafId);
    if (leaf === undefined || nodes[0].parentId !== leaf.id || leaf.node.children.length > 0) return false;
    for (let i = 1; i < nodes.length; i++) if (nodes[i].parentId !== nodes[i - 1].id) return false;
    const key = keyOf(this.listOf(leaf));
    const list = this.lists.get(key);
    if (list === undefined || list.hasMoreAfter || list.rows.at(-1)?.id !== leaf.id) return false;
    list.rows[list.rows.length - 1] = { ...list.rows.at(-1)!, children: [nodes[0].id], isLeaf: change.leafId === leaf.id };
    list.rows.push(...nodes.map((n) => ({ ...n })));
    // Every branch above the leaf's list holds the new entries too.
    for (let group = this.groupAbove(key); group !== undefined; ) {
      const point = this.rowNode(group.parentRowId);
      if (point?.branches !== undefined) point.branches[group.index] = { ...point.branches[group.index], entryCount: point.branches[group.index].entryCount + nodes.length };
      const pointRow = this.byId.get(group.parentRowId);
      group = pointRow === undefined ? undefined : this.groupAbove(keyOf(this.listOf(pointRow)));
    }
    for (const [target, label] of Object.entries(change.labels ?? {})) {
      for (const state of this.lists.values()) {
        for (let i = 0; i < state.rows.length; i++) {
          const row = state.rows[i];
          if (row.id === target) state.rows[i] = { ...row, label };
          if (row.branches?.some((b) => b.first.id === target)) {
            state.rows[i] = { ...state.rows[i], branches: row.branches.map((b) => (b.first.id === target ? { ...b, first: { ...b.first, label } } : b)) };
          }
        }
      }
    }
    this._leafId = change.leafId;
    this._entryCount += nodes.length;
    this.rebuild();
    return true;
  }

  private listOf(row: Row): string | null {
    if (row.parentRowId === undefined) return null;
    const group = this.elements.get(row.parentRowId);
    return group?.type === 'branch' ? group.first.id : null;
  }

  private groupAbove(key: string): BranchGroup | undefined {
    if (key === TOP) return undefined;
    const group = this.elements.get(branchGroupId(key));
    return group?.type === 'branch' ? group : undefined;
  }

  private rowNode(id: string): TreeRowNode | undefined {
    for (const state of this.lists.values()) {
      const found = state.rows.find((r) => r.id === id);
      if (found !== undefined) return found;
    }
    return undefined;
  }

  /** Elements from the loaded lists, as treeModel.ts lays out the whole tree. */
  private rebuild(): void {
    this.rows = [];
    this.byId = new Map();
    this.elements = new Map();
    this.kids = new Map();
    const addList = (branch: string | null, parentRowId: string | undefined, depth: number, info: Row['branch']): void => {
      const state = this.lists.get(keyOf(branch));
      const out: TreeElement[] = [];
      this.kids.set(parentRowId, out);
      if (state === undefined) return;
      const more = (direction: 'before' | 'after', cursor: string): MoreRows => {
        const el: MoreRows = { type: 'more', id: `more:${direction}:${keyOf(branch)}`, list: branch, direction, cursor, parentRowId, depth };
        this.elements.set(el.id, el);
        return el;
      };
      if (state.hasMoreBefore && state.rows.length > 0) out.push(more('before', state.rows[0].id));
      state.rows.forEach((node, i) => {
        const branches = node.children.length > 1 ? node.branches ?? [] : [];
        const row: Row = {
          type: 'entry',
          id: node.id,
          node: plainNode(node),
          depth,
          parentRowId,
          branch: i === 0 && !state.hasMoreBefore ? info : undefined,
          isBranchPoint: node.children.length > 1,
        };
        out.push(row);
        this.rows.push(row);
        this.byId.set(row.id, row);
        this.elements.set(row.id, row);
        if (branches.length > 0) {
          const groups = branches.map((b, index) => this.group(row, b, index, branches.length));
          this.kids.set(row.id, groups);
          groups.forEach((g, index) => addList(g.first.id, g.id, depth + 1, { index, count: groups.length }));
        }
      });
      if (state.hasMoreAfter && state.rows.length > 0) out.push(more('after', state.rows.at(-1)!.id));
    };
    addList(null, undefined, 0, undefined);
  }

  private group(point: Row, branch: TreeBranch, index: number, count: number): BranchGroup {
    const loaded = this.lists.get(branch.first.id)?.rows[0];
    const first = loaded !== undefined && loaded.id === branch.first.id ? plainNode(loaded) : branch.first;
    const group: BranchGroup = {
      type: 'branch',
      id: branchGroupId(branch.first.id),
      parentRowId: point.id,
      index,
      count,
      first,
      entryCount: branch.entryCount,
      containsLeaf: first.onLeafPath,
      depth: point.depth + 1,
    };
    this.elements.set(group.id, group);
    return group;
  }
}

function copyPage(page: TreeListPage): ListState {
  return { rows: [...page.rows], hasMoreBefore: page.hasMoreBefore, hasMoreAfter: page.hasMoreAfter };
}

/** A row's node without its branches (they become group elements). */
function plainNode(node: TreeRowNode): TreeNode {
  if (node.branches === undefined) return node;
  const rest: TreeRowNode = { ...node };
  delete rest.branches;
  return rest;
}
