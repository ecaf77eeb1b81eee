import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  ancestorsOf,
  branchText,
  buildTreeModel,
  containsLeafPath,
  hasSummaryDocument,
  kindInfo,
  oneLine,
  pathMarker,
  rowContextValue,
  rowText,
} from '../src/core/treeModel';
import { chain, makeTree } from './support/trees';
import type { Spec } from './support/trees';

const ids = (rows: readonly { id: string }[]): string[] => rows.map((r) => r.id);

describe('treeModel: linear runs stay flat', () => {
  it('a 1,000-entry linear session is one top-level list at depth 0', () => {
    const model = buildTreeModel(makeTree(chain(1000)));
    assert.equal(model.rows.length, 1000);
    assert.ok(model.rows.every((r) => r.depth === 0 && r.parentRowId === undefined && !r.isBranchPoint));
    const top = model.childrenOf(undefined);
    assert.equal(top.length, 1000);
    assert.deepEqual(ids(top), chain(1000).map((s) => s.id));
    assert.equal(model.childrenOf('e500').length, 0);
  });

  it('handles a 100,000-entry chain without recursion limits', () => {
    const model = buildTreeModel(makeTree(chain(100_000)));
    assert.equal(model.childrenOf(undefined).length, 100_000);
    assert.equal(model.rows[99_999].id, 'e99999');
  });
});

describe('treeModel: the path to the leaf is one flat list, other branches in groups', () => {
  // r - a - b -+- c - d
  //            +- e - f -+- g
  //                      +- h - i   (leaf i)
  const specs: Spec[] = [
    { id: 'r', parentId: null },
    { id: 'a', parentId: 'r' },
    { id: 'b', parentId: 'a' },
    { id: 'c', parentId: 'b' },
    { id: 'd', parentId: 'c' },
    { id: 'e', parentId: 'b' },
    { id: 'f', parentId: 'e' },
    { id: 'g', parentId: 'f' },
    { id: 'h', parentId: 'f' },
    { id: 'i', parentId: 'h' },
  ];
  const model = buildTreeModel(makeTree(specs, 'i'));

  it('lists the path at depth 0 whatever the number of branch points; alternatives two levels in', () => {
    assert.deepEqual(ids(model.childrenOf(undefined)), ['r', 'a', 'b', 'e', 'f', 'h', 'i']);
    assert.deepEqual(
      model.rows.map((r) => `${r.id}${r.depth}`),
      ['r0', 'a0', 'b0', 'c2', 'd2', 'e0', 'f0', 'g2', 'h0', 'i0'],
    );
    assert.equal(model.leafRowId, 'i');
  });

  it('a branch point on the path holds the OTHER branches, each flat in its group', () => {
    assert.deepEqual(ids(model.childrenOf('b')), ['branch:c']);
    assert.deepEqual(ids(model.childrenOf('branch:c')), ['c', 'd']);
    assert.deepEqual(ids(model.childrenOf('f')), ['branch:g']);
    assert.deepEqual(ids(model.childrenOf('branch:g')), ['g']);
    assert.deepEqual(ids(model.childrenOf('h')), []);
    assert.deepEqual(ids(ancestorsOf(model, 'g')), ['f', 'branch:g']);
    assert.deepEqual(ids(ancestorsOf(model, 'i')), []);
    assert.equal(model.byId.get('c')!.branch?.index, 0);
  });

  it('puts marks first: the leaf, the other branches; the count before the preview in groups', () => {
    assert.deepEqual(rowText(model.byId.get('i')!), { label: '● leaf · text of i', description: 'user' });
    assert.deepEqual(rowText(model.byId.get('b')!), { label: '⎇ 1 other branch · text of b', description: 'user' });
    assert.deepEqual(rowText(model.byId.get('a')!), { label: 'text of a', description: 'user' });
    const group = model.elements.get('branch:c');
    assert.ok(group?.type === 'branch');
    assert.deepEqual(branchText(group), { label: 'Branch 1 of 2 · 2 entries · user: text of c', description: '' });
    const other = model.elements.get('branch:g');
    assert.ok(other?.type === 'branch');
    assert.equal(branchText(other).label, 'Branch 1 of 2 · 1 entry · user: text of g');
  });

  it('nothing starts expanded (the leaf is never inside a group)', () => {
    assert.ok([...model.elements.values()].every((el) => !containsLeafPath(el)));
  });

  it('a leaf off the end of a branch: the path still flat, the rest of the tree in groups', () => {
    const m = buildTreeModel(makeTree(specs, 'd'));
    assert.deepEqual(ids(m.childrenOf(undefined)), ['r', 'a', 'b', 'c', 'd']);
    assert.deepEqual(ids(m.childrenOf('b')), ['branch:e']);
    assert.deepEqual(ids(m.childrenOf('branch:e')), ['e', 'f']);
    // A branch point inside an alternative branch holds all its branches.
    assert.deepEqual(ids(m.childrenOf('f')), ['branch:g', 'branch:h']);
    assert.equal(rowText(m.byId.get('f')!).label, '⎇ 2 branches · text of f');
    assert.deepEqual(m.rows.filter((r) => r.depth === 4).map((r) => r.id), ['g', 'h', 'i']);
  });

  it('a leaf inside a run: what follows it continues the top level, off the path', () => {
    const m = buildTreeModel(makeTree(specs, 'e'));
    assert.deepEqual(ids(m.childrenOf(undefined)), ['r', 'a', 'b', 'e', 'f']);
    assert.equal(pathMarker(m.byId.get('f')!.node), 'off');
    assert.deepEqual(ids(m.childrenOf('f')), ['branch:g', 'branch:h']);
  });

  it('marks the leaf and the path to it', () => {
    assert.equal(pathMarker(model.byId.get('i')!.node), 'leaf');
    assert.equal(pathMarker(model.byId.get('h')!.node), 'path');
    assert.equal(pathMarker(model.byId.get('r')!.node), 'path');
    assert.equal(pathMarker(model.byId.get('g')!.node), 'off');
    assert.equal(pathMarker(model.byId.get('d')!.node), 'off');
  });

  it('stays flat on a 25-branch path of 20,000 entries', () => {
    const deep: Spec[] = chain(800, "p0_");
    for (let b = 1; b < 25; b++) {
      const from = `p${b - 1}_799`;
      deep.push({ id: `x${b}`, parentId: from }); // the branch left behind
      deep.push(...chain(800, `p${b}_`, from));
    }
    const m = buildTreeModel(makeTree(deep, "p24_799"));
    assert.equal(m.childrenOf(undefined).length, 25 * 800);
    assert.ok(m.childrenOf(undefined).every((el) => el.type === 'entry' && el.depth === 0));
    assert.equal(m.childrenOf(undefined).at(-1)!.id, "p24_799");
    assert.equal(m.rows.filter((r) => r.isBranchPoint).length, 24);
  });
});

describe('treeModel: labels show on their targets, not as rows', () => {
  it('hides label entries; a label leaf passes the leaf mark to the row before it', () => {
    const specs: Spec[] = [...chain(3), { id: 'L', parentId: 'e2', kind: 'label', preview: 'label: x' }];
    const tree = makeTree(specs, 'L');
    tree.nodes[1].label = 'checkpoint-A';
    const m = buildTreeModel(tree);
    assert.deepEqual(ids(m.childrenOf(undefined)), ['e0', 'e1', 'e2']);
    assert.equal(m.leafRowId, 'e2');
    assert.equal(m.byId.get('e2')!.node.isLeaf, true);
    assert.equal(m.byId.has('L'), false);
    assert.equal(rowText(m.byId.get('e1')!).label, '[checkpoint-A] · text of e1');
    assert.equal(rowText(m.byId.get('e2')!).label, '● leaf · text of e2');
  });

  it('forty label entries after a fork: the leaf mark stays on the last real entry', () => {
    const specs: Spec[] = chain(5);
    for (let i = 0; i < 40; i++) specs.push({ id: `L${i}`, parentId: i === 0 ? 'e4' : `L${i - 1}`, kind: 'label' });
    const m = buildTreeModel(makeTree(specs, 'L39'));
    assert.deepEqual(ids(m.childrenOf(undefined)), ['e0', 'e1', 'e2', 'e3', 'e4']);
    assert.equal(m.leafRowId, 'e4');
  });
});

describe('treeModel: odd inputs', () => {
  it('starts a top-level run for an orphan whose parent is missing', () => {
    const model = buildTreeModel(makeTree([...chain(3), { id: 'x', parentId: 'gone' }, { id: 'y', parentId: 'x' }], 'e2'));
    assert.deepEqual(ids(model.childrenOf(undefined)), ['e0', 'e1', 'e2', 'x', 'y']);
  });

  it('ignores child ids that are not nodes and never loops on a cycle', () => {
    const tree = makeTree(chain(3), 'e2');
    tree.nodes[2].children.push('missing', 'e0');
    const model = buildTreeModel(tree);
    assert.deepEqual(ids(model.rows), ['e0', 'e1', 'e2']);
  });

  it('is empty for an empty session', () => {
    const model = buildTreeModel({ leafId: null, nodes: [] });
    assert.equal(model.rows.length, 0);
    assert.deepEqual(model.childrenOf(undefined), []);
  });
});

describe('treeModel: what a row shows', () => {
  const specs: Spec[] = [
    { id: 'r', parentId: null, kind: 'user', preview: 'fix   the\nbuild' },
    { id: 'c1', parentId: 'r', kind: 'compaction', label: 'checkpoint', preview: 'summary text' },
    { id: 'b1', parentId: 'r', kind: 'branchSummary', preview: '' },
  ];
  const model = buildTreeModel(makeTree(specs, 'c1'));

  it('uses the one-line preview as label, the kind beside it', () => {
    assert.deepEqual(rowText(model.byId.get('r')!), { label: '⎇ 1 other branch · fix the build', description: 'user' });
  });

  it('labels summary nodes by what they are, figures of one kind, one count per branch summary', () => {
    assert.deepEqual(rowText(model.byId.get('c1')!), { label: '● leaf · [checkpoint] · Compaction', description: '' });
    assert.deepEqual(rowText(model.byId.get('b1')!), { label: 'Branch summary', description: '' });
    const tree = makeTree(specs, 'c1');
    Object.assign(tree.nodes[1], { tokensBefore: 949, tokensAfter: 1500, contextBasis: 'estimate', contextBefore: 181_000, contextAfter: 22_700, contextShrank: true });
    Object.assign(tree.nodes[2], { summarizedEntries: 12 });
    const m = buildTreeModel(tree);
    assert.equal(rowText(m.byId.get('c1')!).label, '● leaf · [checkpoint] · Compaction · about 181k → 22.7k tokens (estimates)');
    assert.equal(rowText(m.byId.get('b1')!).label, 'Branch summary · summarizes 12 entries');
    const group = m.childrenOf('r').map((g) => (g.type === 'branch' ? branchText(g).label : ''));
    assert.deepEqual(group, ['Branch 2 of 2 · 1 entry · branch summary: (empty)']);
    // The estimates grew: said on the row.
    Object.assign(tree.nodes[1], { contextBefore: 900, contextAfter: 1500, contextShrank: false });
    assert.match(rowText(buildTreeModel(tree).byId.get('c1')!).label, /about 900 → 1.5k tokens \(estimates\) · ⚠ did not shrink$/);
    // oh-my-pi's own figures, method and warning, as recorded.
    Object.assign(tree.nodes[1], { contextBasis: 'recorded', contextBefore: 4477, contextAfter: 16_605, contextShrank: false,
      compactionMethod: 'handoff', compactionWarning: 'Compaction freed too little context' });
    assert.equal(rowText(buildTreeModel(tree).byId.get('c1')!).label,
      '● leaf · [checkpoint] · Compaction (handoff) · 4.5k → 16.6k tokens (recorded) · ⚠ did not shrink');
    // A fork keeps the summary but not the branch it summarized.
    Object.assign(tree.nodes[2], { summarizedEntries: null });
    assert.equal(rowText(buildTreeModel(tree).byId.get('b1')!).label, 'Branch summary · of a branch not in this file');
  });

  it('marks a message a Pi 1.6 context edit omits or replaces, first on its row', () => {
    const tree = makeTree(chain(3), 'e2');
    Object.assign(tree.nodes[0], { contextEdit: 'omitted' });
    Object.assign(tree.nodes[1], { contextEdit: 'replaced' });
    const m = buildTreeModel(tree);
    assert.equal(rowText(m.byId.get('e0')!).label, '⊘ omitted from context · text of e0');
    assert.equal(rowText(m.byId.get('e1')!).label, '✎ replaced in context · text of e1');
  });

  it('gives menus context words', () => {
    assert.equal(rowContextValue(model.byId.get('c1')!), 'entry kind-compaction labelled leaf summary');
    assert.equal(rowContextValue(model.byId.get('r')!), 'entry kind-user');
  });

  it('knows every kind the daemon sends, and copes with new ones', () => {
    for (const k of ['user', 'assistant', 'toolResult', 'bash', 'compaction', 'branchSummary', 'customMessage', 'custom', 'label', 'modelChange', 'thinkingLevel', 'sessionInfo', 'developer', 'system', 'contextEdit', 'usage', 'resetBoundary']) {
      assert.notEqual(kindInfo(k).icon, 'circle-outline', k);
    }
    assert.deepEqual(kindInfo('somethingNew'), { title: 'somethingNew', icon: 'circle-outline' });
    assert.equal(hasSummaryDocument('compaction'), true);
    assert.equal(hasSummaryDocument('branchSummary'), true);
    assert.equal(hasSummaryDocument('assistant'), false);
  });

  it('cuts long previews to one line', () => {
    assert.equal(oneLine('a\n\n b', 10), 'a b');
    assert.equal(oneLine('x'.repeat(20), 10), `${'x'.repeat(9)}…`);
  });
});
