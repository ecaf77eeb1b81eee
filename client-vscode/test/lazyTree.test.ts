// The lazily loaded panel model against the REAL daemon: pages and branches loaded on demand
// reassemble exactly into the model built from the whole tree, and session/didChange deltas
// applied in place give what a fresh fetch gives.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { LazyTreeModel } from '../src/core/lazyTree';
import type { DidChangeParams } from '../src/core/protocol';
import { buildTreeModel, moreText } from '../src/core/treeModel';
import type { TreeElement, TreeModel } from '../src/core/treeModel';
import { startDaemon } from './support/daemon';
import type { Daemon } from './support/daemon';
import { tempDir } from './support/paths';
import { writeBranchingSession, writeLinearSession, writeStretchedSession } from './support/sessions';

/** Load every page and every branch, as a user clicking "Earlier entries…" and expanding all would. */
async function loadAll(d: Daemon, sessionId: string, model: LazyTreeModel, limit: number): Promise<number> {
  let requests = 0;
  for (;;) {
    const pending: TreeElement[] = [...model.elements.values()].filter(
      (el) => el.type === 'more' || (el.type === 'branch' && model.needsLoad(el.id) !== undefined),
    );
    if (pending.length === 0) return requests;
    const el = pending[0];
    requests++;
    if (el.type === 'more') {
      const page = await d.client.treePage({ sessionId, limit, branch: el.list, [el.direction]: el.cursor });
      model.addPage(page.lists[0], el.direction);
    } else if (el.type === 'branch') {
      const page = await d.client.treePage({ sessionId, limit, branch: el.first.id });
      model.addPage(page.lists[0], 'first');
    }
  }
}

/** What the view shows, element by element, from the top level down. */
function shown(model: TreeModel): unknown[] {
  const out: unknown[] = [];
  const walk = (id: string | undefined): void => {
    for (const el of model.childrenOf(id)) {
      out.push(el);
      walk(el.id);
    }
  };
  walk(undefined);
  return out;
}

describe('real daemon: the lazily loaded side panel', { timeout: 120_000 }, () => {
  let d: Daemon;
  before(async () => {
    d = await startDaemon();
  });
  after(async () => {
    await d.stop();
  });

  it('loads pages and branches on demand into exactly the whole tree', async () => {
    const dir = tempDir();
    for (const file of [writeLinearSession(dir, 300), writeBranchingSession(tempDir()).file]) {
      const info = await d.client.open(file);
      const full = buildTreeModel(await d.client.tree(info.sessionId));
      for (const limit of [1, 3, 40]) {
        const screen = await d.client.treePage({ sessionId: info.sessionId, limit });
        const model = new LazyTreeModel(screen);
        assert.equal(model.entryCount, full.rows.length);
        // The first screen already holds the leaf and every element above it.
        assert.ok(model.byId.get(full.leafId!)?.node.isLeaf);
        const requests = await loadAll(d, info.sessionId, model, limit);
        assert.ok(limit > 100 || requests > 0);
        assert.deepEqual(model.rows, full.rows);
        assert.deepEqual(shown(model), shown(full));
      }
      await d.client.close(info.sessionId);
    }
  });

  it('shows each stretch of the path between branch points with at most one row of earlier entries, saying how many', async () => {
    const { file, leafId } = writeStretchedSession(tempDir(), 4, 30);
    const info = await d.client.open(file);
    const sessionId = info.sessionId;
    const model = new LazyTreeModel(await d.client.treePage({ sessionId, limit: 10 }));
    assert.equal(model.leafRowId, leafId);
    for (let clicks = 0; ; clicks++) {
      const top = model.childrenOf(undefined);
      // Between two branch points (and above the first), never two "earlier" rows in a row.
      for (let i = 1; i < top.length; i++) assert.ok(!(top[i].type === 'more' && top[i - 1].type === 'more'), `row ${i}`);
      const mores = top.filter((el) => el.type === 'more');
      assert.equal(new Set(mores.map((el) => el.type === 'more' && el.list)).size, mores.length);
      // Each says how many entries of its stretch are not loaded yet: every entry is a row or counted.
      const counted = mores.reduce((n, el) => n + (el.type === 'more' ? el.count ?? NaN : 0), 0);
      assert.equal(top.filter((el) => el.type === 'entry').length + counted, 4 * 30);
      for (const el of mores) {
        if (el.type === 'more') assert.match(moreText(el).label, /^\d+ earlier entr(y|ies)…$/);
      }
      if (mores.length === 0) break;
      assert.ok(clicks < 20);
      const el = mores[mores.length - 1];
      if (el.type !== 'more') break;
      const page = await d.client.treePage({ sessionId, limit: 10, branch: el.list, before: el.cursor });
      model.addPage(page.lists[0], 'before');
    }
    await d.client.close(sessionId);
  });

  it('applies appended entries and labels in place, as a fresh fetch shows them', async () => {
    const { file } = writeBranchingSession(tempDir());
    const info = await d.client.open(file);
    const sessionId = info.sessionId;
    const model = new LazyTreeModel(await d.client.treePage({ sessionId, limit: 50 }));
    const changes: DidChangeParams[] = [];
    const sub = d.client.onDidChange((p) => changes.push(p));
    try {
      await d.connection.sendRequest('session/append', {
        sessionId,
        entries: [
          { type: 'message', message: { role: 'user', content: 'one more', timestamp: 1_760_000_500_000 } },
          { type: 'message', message: { role: 'user', content: 'and another', timestamp: 1_760_000_500_001 } },
        ],
      });
      await d.client.label({ sessionId, targetId: 'c0', label: 'second try' });
      await d.client.label({ sessionId, targetId: 'a1', label: 'start' });
      assert.equal(changes.length, 3);
      for (const change of changes) assert.equal(model.applyChange(change), true, change.kind);
    } finally {
      sub.dispose();
    }
    const fresh = new LazyTreeModel(await d.client.treePage({ sessionId, limit: 50 }));
    assert.equal(model.leafId, fresh.leafId);
    assert.equal(model.entryCount, fresh.entryCount);
    assert.deepEqual(shown(model), shown(fresh));
    // c0 is on the path (a top-level row): its label shows on it; the label entries are no rows, and
    // the leaf mark (the leaf is the last label entry) is on the last message.
    assert.equal(model.byId.get('c0')?.node.label, 'second try');
    assert.equal(model.byId.get('a1')?.node.label, 'start');
    const last = model.childrenOf(undefined).at(-1);
    assert.ok(last?.type === 'entry' && last.node.preview === 'and another' && last.node.isLeaf && model.leafRowId === last.id);
    assert.ok(model.rows.every((r) => r.node.kind !== 'label'));
    // A leaf move is not applied in place: the caller fetches the leaf's screen again.
    assert.equal(model.applyChange({ sessionId, kind: 'leafMoved', entryIds: [], leafId: 'b1' }), false);
    await d.client.close(sessionId);
  });
});
