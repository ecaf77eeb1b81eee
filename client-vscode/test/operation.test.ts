import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ResponseError } from 'vscode-jsonrpc';
import { Operation, OperationRegistry } from '../src/core/operation';

describe('Operation', () => {
  it('goes idle -> running -> done and reports 100% on completion', async () => {
    const op = new Operation('t');
    const states: string[] = [];
    op.onDidChange((o) => states.push(o.state));
    assert.equal(op.state, 'idle');
    const result = await op.run((_token, onProgress) => {
      onProgress({ kind: 'begin', title: 't', percentage: 0 });
      onProgress({ kind: 'report', message: 'Summarizing', percentage: 40, text: '## Goal' });
      return Promise.resolve(42);
    });
    assert.deepEqual(result, { outcome: 'completed', value: 42 });
    assert.equal(op.state, 'done');
    assert.equal(op.outcome, 'completed');
    assert.equal(op.percentage, 100);
    assert.equal(op.text, '## Goal');
    assert.equal(states[0], 'running');
    assert.equal(states.at(-1), 'done');
  });

  it('keeps the percentage from going back and hands out increments once', () => {
    const op = new Operation('t');
    op.start();
    op.report({ kind: 'report', percentage: 30 });
    assert.equal(op.takeIncrement(), 30);
    op.report({ kind: 'report', percentage: 10 });
    assert.equal(op.percentage, 30);
    assert.equal(op.takeIncrement(), 0);
    op.report({ kind: 'report', percentage: 250 });
    assert.equal(op.percentage, 100);
    assert.equal(op.takeIncrement(), 70);
  });

  it('keeps the latest streamed text and shows its end in one line', () => {
    const op = new Operation('t');
    op.start();
    op.report({ kind: 'report', message: 'Summarizing', text: 'a\nb' });
    assert.equal(op.displayMessage(), 'Summarizing: a b');
    op.report({ kind: 'report', text: `## Goal\n${'x'.repeat(300)}END` });
    const line = op.displayMessage(50);
    assert.ok(line.startsWith('Summarizing: …'));
    assert.ok(line.endsWith('END'));
    assert.equal(line.length, 'Summarizing: '.length + 50);
  });

  it('cancel() moves to cancelling, cancels the token, and a RequestCancelled answer ends as cancelled', async () => {
    const op = new Operation('t');
    let sawCancel = false;
    const pending = op.run(
      (token) =>
        new Promise<never>((_, reject) => {
          token.onCancellationRequested(() => {
            sawCancel = true;
            reject(new ResponseError(-32800, 'Compaction cancelled'));
          });
        }),
    );
    assert.equal(op.state, 'running');
    assert.equal(op.cancel(), true);
    assert.equal(op.displayMessage(), 'Cancelling…');
    assert.equal(op.cancel(), false);
    assert.deepEqual(await pending, { outcome: 'cancelled' });
    assert.equal(sawCancel, true);
    assert.equal(op.state, 'done');
    assert.equal(op.outcome, 'cancelled');
  });

  it('other errors end as failed with their message; reports after the end are ignored', async () => {
    const op = new Operation('t');
    const r = await op.run(() => Promise.reject(new ResponseError(-32015, 'Compaction failed: 500')));
    assert.equal(r.outcome, 'failed');
    assert.equal(r.outcome === 'failed' && r.message, 'Compaction failed: 500');
    op.report({ kind: 'report', text: 'late' });
    assert.equal(op.text, '');
    assert.throws(() => op.start(), /cannot start/);
  });
});

describe('OperationRegistry', () => {
  it('tracks whether anything runs (the Escape key context) and cancels all', async () => {
    const reg = new OperationRegistry();
    const flips: boolean[] = [];
    reg.onDidChangeRunning((v) => flips.push(v));
    const a = reg.create('a');
    const b = reg.create('b');
    const never = (token: { onCancellationRequested: (f: () => void) => unknown }) =>
      new Promise<never>((_, reject) => token.onCancellationRequested(() => reject(new ResponseError(-32800, 'x'))));
    const pa = a.run(never);
    const pb = b.run(never);
    assert.equal(reg.anyRunning, true);
    assert.equal(reg.operations.length, 2);
    assert.equal(reg.cancelAll(), 2);
    await Promise.all([pa, pb]);
    assert.equal(reg.anyRunning, false);
    assert.deepEqual(flips, [true, false]);
    assert.equal(reg.cancelAll(), 0);
  });
});
