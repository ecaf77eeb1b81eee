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

describe('treeModel: depth grows only at branch points', () => {
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

  it('lists rows depth first with the expected depths', () => {
    assert.deepEqual(
      model.rows.map((r) => `${r.id}${r.depth}`),
      ['r0', 'a0', 'b0', 'c1', 'd1', 'e1', 'f1', 'g2', 'h2', 'i2'],
    );
  });

  it('lists one group per branch under a branch point, each branch flat inside its group', () => {
    assert.deepEqual(ids(model.childrenOf(undefined)), ['r', 'a', 'b']);
    assert.deepEqual(ids(model.childrenOf('b')), ['branch:c', 'branch:e']);
    assert.deepEqual(ids(model.childrenOf('branch:c')), ['c', 'd']);
    assert.deepEqual(ids(model.childrenOf('branch:e')), ['e', 'f']);
    assert.deepEqual(ids(model.childrenOf('f')), ['branch:g', 'branch:h']);
    assert.deepEqual(ids(model.childrenOf('branch:h')), ['h', 'i']);
    assert.deepEqual(ids(model.childrenOf('c')), []);
  });

  it('labels a group with which branch it is and what it starts with', () => {
    const groups = model.childrenOf('b').map((g) => (g.type === 'branch' ? g : assert.fail()));
    assert.deepEqual(groups.map((g) => [g.index, g.count, g.entryCount, g.containsLeaf]), [
      [0, 2, 2, false],
      [1, 2, 5, true],
    ]);
    assert.deepEqual(branchText(groups[0]), { label: 'Branch 1 of 2 · user: text of c', description: '2 entries' });
    assert.deepEqual(branchText(groups[1]), { label: 'Branch 2 of 2 · user: text of e', description: '5 entries · ● current branch' });
  });

  it('marks branch points and the head of every branch', () => {
    assert.deepEqual(
      model.rows.filter((r) => r.isBranchPoint).map((r) => r.id),
      ['b', 'f'],
    );
    const heads = model.rows.filter((r) => r.branch !== undefined).map((r) => `${r.id}:${r.branch!.index + 1}/${r.branch!.count}`);
    assert.deepEqual(heads, ['c:1/2', 'e:2/2', 'g:1/2', 'h:2/2']);
    assert.equal(model.byId.get('d')!.branch, undefined);
  });

  it('knows parents and ancestors for reveal()', () => {
    assert.equal(model.byId.get('i')!.parentRowId, 'branch:h');
    assert.equal(model.elements.get('branch:h')!.parentRowId, 'f');
    assert.equal(model.byId.get('f')!.parentRowId, 'branch:e');
    assert.deepEqual(ids(ancestorsOf(model, 'i')), ['b', 'branch:e', 'f', 'branch:h']);
    assert.ok(ancestorsOf(model, 'i').every((e) => containsLeafPath(e)));
    assert.deepEqual(ids(ancestorsOf(model, 'a')), []);
  });

  it('expands branch points on the leaf path only', () => {
    assert.equal(containsLeafPath(model.byId.get('b')!), true);
    assert.equal(containsLeafPath(model.byId.get('f')!), true);
    const offPath = buildTreeModel(makeTree(specs, 'd'));
    assert.equal(containsLeafPath(offPath.byId.get('f')!), false);
    assert.equal(containsLeafPath(offPath.byId.get('b')!), true);
  });

  it('marks the leaf and the path to it', () => {
    assert.equal(pathMarker(model.byId.get('i')!.node), 'leaf');
    assert.equal(pathMarker(model.byId.get('h')!.node), 'path');
    assert.equal(pathMarker(model.byId.get('r')!.node), 'path');
    assert.equal(pathMarker(model.byId.get('g')!.node), 'off');
    assert.equal(pathMarker(model.byId.get('d')!.node), 'off');
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

  it('uses the one-line preview as label and puts kind, label and leaf beside it', () => {
    assert.deepEqual(rowText(model.byId.get('r')!), { label: 'fix the build', description: 'user' });
  });

  it('labels summary nodes by what they are, with the daemon\'s figures', () => {
    assert.deepEqual(rowText(model.byId.get('c1')!), { label: 'Compaction', description: '● leaf · [checkpoint]' });
    assert.deepEqual(rowText(model.byId.get('b1')!), { label: 'Branch summary', description: '' });
    const tree = makeTree(specs, 'c1');
    Object.assign(tree.nodes[1], { tokensBefore: 181_000, tokensAfter: 22_700 });
    Object.assign(tree.nodes[2], { summarizedEntries: 12 });
    const m = buildTreeModel(tree);
    assert.equal(rowText(m.byId.get('c1')!).label, 'Compaction · 181k → 22.7k tokens');
    assert.equal(rowText(m.byId.get('b1')!).label, 'Branch summary · 12 entries');
    const groups = m.childrenOf('r').map((g) => (g.type === 'branch' ? branchText(g).label : ''));
    assert.deepEqual(groups, ['Branch 1 of 2 · Compaction · 181k → 22.7k tokens', 'Branch 2 of 2 · Branch summary · 12 entries']);
  });

  it('gives menus context words', () => {
    assert.equal(rowContextValue(model.byId.get('c1')!), 'entry kind-compaction labelled leaf summary');
    assert.equal(rowContextValue(model.byId.get('r')!), 'entry kind-user');
  });

  it('knows every kind the daemon sends, and copes with new ones', () => {
    for (const k of ['user', 'assistant', 'toolResult', 'bash', 'compaction', 'branchSummary', 'customMessage', 'custom', 'label', 'modelChange', 'thinkingLevel', 'sessionInfo', 'developer']) {
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
