// The side panel's tree loaded lazily from paged `session/tree` answers (protocol.md, "Paged
// tree"): the leaf's screen first, then pages of a list on demand ("Earlier entries…") and a
// branch's list when its group is expanded. The elements are laid out by treeModel.ts's
// `layoutLists` (the path to the leaf as one flat list, other branches in collapsed groups), the
// same as from the whole tree. `session/didChange` deltas (appended nodes, labels) are applied in
// place when they extend the leaf's list; anything else asks the caller to fetch the screen again.
import type { DidChangeParams, TreeListPage, TreePageResult, TreeRowNode } from './protocol';
import { keyOf, layoutLists } from './treeModel';
import type { ListState, Row, TreeElement, TreeModel } from './treeModel';

export class LazyTreeModel implements TreeModel {
  private lists = new Map<string, ListState>();
  /** Keys of the lists on the path to the leaf, top level first. */
  private pathKeys: string[];
  private _leafId: string | null;
  private _entryCount: number;
  leafRowId: string | null = null;
  rows: Row[] = [];
  byId = new Map<string, Row>();
  elements = new Map<string, TreeElement>();
  private kids = new Map<string | undefined, TreeElement[]>();
  private listOf = new Map<string, string>();

  constructor(screen: TreePageResult) {
    this._leafId = screen.leafId;
    this._entryCount = screen.entryCount;
    this.pathKeys = screen.leafPath.map((p) => keyOf(p.branch));
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
      known.moreBefore = page.moreBefore;
    } else {
      known.rows = [...known.rows, ...page.rows];
      known.hasMoreAfter = page.hasMoreAfter;
      known.moreAfter = page.moreAfter;
    }
    this.rebuild();
  }

  /** Apply a session/didChange; false when the caller must fetch the leaf's screen again. */
  applyChange(change: DidChangeParams): boolean {
    const nodes = change.nodes;
    if (change.kind !== 'appended' || nodes === undefined) return false;
    if (nodes.length === 0) return true;
    // Appended at the leaf, which ends its loaded list: the new entries continue that list.
    const leafId = this._leafId;
    const key = leafId === null ? undefined : this.pathKeys.at(-1);
    const list = key === undefined ? undefined : this.lists.get(key);
    const last = list?.rows.at(-1);
    if (list === undefined || last === undefined || last.id !== leafId || list.hasMoreAfter) return false;
    if (nodes[0].parentId !== last.id || last.children.length > 0) return false;
    for (let i = 1; i < nodes.length; i++) if (nodes[i].parentId !== nodes[i - 1].id) return false;
    list.rows[list.rows.length - 1] = { ...last, children: [nodes[0].id], isLeaf: change.leafId === last.id };
    list.rows.push(...nodes.map((n) => ({ ...n })));
    // Every branch point above holds the new entries in the branch the path takes.
    for (let i = 1; i < this.pathKeys.length; i++) {
      const point = this.lists.get(this.pathKeys[i - 1])?.rows.find((r) => r.children.includes(this.pathKeys[i]));
      const branches = point?.branches;
      if (branches === undefined) continue;
      const at = branches.findIndex((b) => b.first.id === this.pathKeys[i]);
      if (at >= 0) branches[at] = { ...branches[at], entryCount: branches[at].entryCount + nodes.length };
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

  private rebuild(): void {
    const layout = layoutLists(this.lists, this.pathKeys, this._leafId);
    this.rows = layout.rows;
    this.byId = layout.byId;
    this.elements = layout.elements;
    this.kids = layout.kids;
    this.listOf = layout.listOf;
    this.leafRowId = layout.leafRowId;
  }

  /** The list a row was loaded from (its key; '' for the top level). */
  listKeyOf(rowId: string): string | undefined {
    return this.listOf.get(rowId);
  }
}

function copyPage(page: TreeListPage): ListState {
  return { rows: [...page.rows] as TreeRowNode[], hasMoreBefore: page.hasMoreBefore, hasMoreAfter: page.hasMoreAfter,
    moreBefore: page.moreBefore, moreAfter: page.moreAfter };
}
