// CompactdClient over a real vscode-jsonrpc connection pair (in-process streams): what goes on the
// wire and how notifications and progress are routed. The daemon itself is in daemon.test.ts.
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { after, describe, it } from 'node:test';
import { CancellationTokenSource, ResponseError } from 'vscode-jsonrpc';
import type { CancellationToken, MessageConnection } from 'vscode-jsonrpc';
import { createMessageConnection, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';
import { CompactdClient, errorCode, isCancelled, workDoneProgressType } from '../src/core/protocolClient';
import type { WorkDoneProgressValue } from '../src/core/protocolClient';
import type { DidChangeParams } from '../src/core/protocol';

function pair(): { client: MessageConnection; server: MessageConnection } {
  const up = new PassThrough();
  const down = new PassThrough();
  const client = createMessageConnection(new StreamMessageReader(down), new StreamMessageWriter(up));
  const server = createMessageConnection(new StreamMessageReader(up), new StreamMessageWriter(down));
  return { client, server };
}

describe('CompactdClient', () => {
  const { client: conn, server } = pair();
  const client = new CompactdClient(conn);
  const received: { method: string; params: unknown }[] = [];
  server.onRequest('session/tree', (params: unknown) => {
    received.push({ method: 'session/tree', params });
    return { leafId: null, nodes: [] };
  });
  server.onRequest('session/tokenStats', (params: unknown) => {
    received.push({ method: 'session/tokenStats', params });
    return { contextTokens: 1, contextWindow: 2, reserveTokens: 0, threshold: 2, shouldCompact: false };
  });
  server.onRequest('session/compact', async (params: { workDoneToken: string; sessionId: string }, token: CancellationToken) => {
    received.push({ method: 'session/compact', params });
    await server.sendProgress(workDoneProgressType, params.workDoneToken, { kind: 'begin', title: 'Compaction' });
    await server.sendProgress(workDoneProgressType, params.workDoneToken, { kind: 'report', text: `## Goal ${params.sessionId}`, percentage: 50 });
    if (params.sessionId === 'slow') {
      await new Promise<void>((resolve) => token.onCancellationRequested(() => resolve()));
      throw new ResponseError(-32800, 'Compaction cancelled');
    }
    await server.sendProgress(workDoneProgressType, params.workDoneToken, { kind: 'end', message: 'done' });
    return { entryId: 'c1' };
  });
  server.listen();
  conn.listen();
  after(() => {
    conn.dispose();
    server.dispose();
  });

  it('sends params as one named object, with or without a token', async () => {
    await client.tree('s1');
    await client.tokenStats('s1', 'e5');
    assert.deepEqual(received.slice(-2), [
      { method: 'session/tree', params: { sessionId: 's1' } },
      { method: 'session/tokenStats', params: { sessionId: 's1', leafId: 'e5' } },
    ]);
  });

  it('adds a fresh workDoneToken and routes each operation\'s progress to it alone', async () => {
    const a: WorkDoneProgressValue[] = [];
    const b: WorkDoneProgressValue[] = [];
    const [ra, rb] = await Promise.all([
      client.compact({ sessionId: 'A' }, { onProgress: (v) => a.push(v) }),
      client.compact({ sessionId: 'B' }, { onProgress: (v) => b.push(v) }),
    ]);
    assert.deepEqual([ra, rb], [{ entryId: 'c1' }, { entryId: 'c1' }]);
    assert.deepEqual(a.map((v) => v.kind), ['begin', 'report', 'end']);
    assert.equal(a[1].text, '## Goal A');
    assert.equal(b[1].text, '## Goal B');
    const tokens = received.filter((r) => r.method === 'session/compact').map((r) => (r.params as { workDoneToken: string }).workDoneToken);
    assert.equal(new Set(tokens).size, tokens.length);
    assert.ok(tokens.every((t) => t.startsWith('compactd-')));
  });

  it('cancelling the token sends $/cancelRequest and surfaces RequestCancelled', async () => {
    const source = new CancellationTokenSource();
    const pending = client.compact({ sessionId: 'slow' }, { token: source.token, onProgress: (v) => v.kind === 'report' && source.cancel() });
    await assert.rejects(pending, (e: unknown) => isCancelled(e) && errorCode(e) === -32800);
  });

  it('delivers a notification to every listener (vscode-jsonrpc alone keeps only one)', async () => {
    const first: DidChangeParams[] = [];
    const second: DidChangeParams[] = [];
    const s1 = client.onDidChange((p) => first.push(p));
    const waiters = new Map<string, () => void>();
    const arrived = (leaf: string): Promise<void> => new Promise((resolve) => waiters.set(leaf, resolve));
    client.onDidChange((p) => {
      second.push(p);
      waiters.get(p.leafId ?? '')?.();
    });
    const x1 = arrived('x1');
    await server.sendNotification('session/didChange', { sessionId: 's', kind: 'appended', entryIds: ['x1'], leafId: 'x1' });
    await x1;
    s1.dispose();
    const done = arrived('x2');
    await server.sendNotification('session/didChange', { sessionId: 's', kind: 'appended', entryIds: ['x2'], leafId: 'x2' });
    await done;
    assert.deepEqual(first.map((p) => p.leafId), ['x1']);
    assert.deepEqual(second.map((p) => p.leafId), ['x1', 'x2']);
  });
});
