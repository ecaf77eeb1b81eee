import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CancellationTokenSource } from 'vscode-jsonrpc';
import { HookRegistry, hookMethod, isHookName } from '../src/core/hooks';

const token = () => new CancellationTokenSource().token;

describe('HookRegistry', () => {
  it('answers null when nobody registered', async () => {
    assert.equal(await new HookRegistry().dispatch('beforeCompact', {}, token()), null);
  });

  it('maps hook names to wire methods', () => {
    assert.equal(hookMethod('beforeTree'), 'session/beforeTree');
    assert.equal(isHookName('compacting'), true);
    assert.equal(isHookName('afterCompact'), false);
    assert.throws(() => new HookRegistry().register('nope' as never, () => null), /unknown hook/);
  });

  it('lets a later non-empty answer replace an earlier one; empty answers count as none', async () => {
    const r = new HookRegistry();
    r.register('beforeTree', () => ({ customInstructions: 'first' }));
    r.register('beforeTree', () => ({}));
    r.register('beforeTree', () => Promise.resolve({ label: 'second' }));
    r.register('beforeTree', () => undefined);
    assert.deepEqual(await r.dispatch('beforeTree', {}, token()), { label: 'second' });
  });

  it('stops at a cancel for beforeCompact and beforeTree, not for compacting', async () => {
    const r = new HookRegistry();
    const seen: string[] = [];
    r.register('beforeCompact', () => (seen.push('a'), { cancel: true }));
    r.register('beforeCompact', () => (seen.push('b'), { compaction: { summary: 's' } }));
    assert.deepEqual(await r.dispatch('beforeCompact', {}, token()), { cancel: true });
    assert.deepEqual(seen, ['a']);
    r.register('compacting', () => ({ cancel: true, prompt: 'p1' }));
    r.register('compacting', () => ({ prompt: 'p2' }));
    assert.deepEqual(await r.dispatch('compacting', {}, token()), { prompt: 'p2' });
  });

  it('treats a throwing handler as no answer and reports it', async () => {
    const errors: string[] = [];
    const r = new HookRegistry((hook, owner, e) => errors.push(`${hook}/${owner}/${(e as Error).message}`));
    r.register('compacting', () => ({ prompt: 'ok' }), 'good');
    r.register('compacting', () => {
      throw new Error('boom');
    }, 'bad');
    assert.deepEqual(await r.dispatch('compacting', {}, token()), { prompt: 'ok' });
    assert.deepEqual(errors, ['compacting/bad/boom']);
  });

  it('reports which hooks have handlers, and when that changes', () => {
    const r = new HookRegistry();
    const seen: string[][] = [];
    r.onDidChangeActive((active) => seen.push(active));
    const a = r.register('beforeTree', () => null);
    const b = r.register('beforeTree', () => null);
    const c = r.register('beforeCompact', () => null);
    assert.deepEqual(r.active(), ['beforeCompact', 'beforeTree']);
    a.dispose();
    b.dispose();
    c.dispose();
    c.dispose();
    assert.deepEqual(seen, [['beforeTree'], ['beforeCompact', 'beforeTree'], ['beforeCompact'], []]);
  });

  it('disposing a registration removes the handler; a cancelled request stops the chain', async () => {
    const r = new HookRegistry();
    const d = r.register('beforeTree', () => ({ label: 'x' }));
    assert.equal(r.count('beforeTree'), 1);
    d.dispose();
    assert.equal(r.count('beforeTree'), 0);
    assert.equal(await r.dispatch('beforeTree', {}, token()), null);
    r.register('beforeTree', () => ({ label: 'y' }));
    const src = new CancellationTokenSource();
    src.cancel();
    assert.equal(await r.dispatch('beforeTree', {}, src.token), null);
  });
});
