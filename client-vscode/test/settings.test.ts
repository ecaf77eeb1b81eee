import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  didChangeConfigurationParams,
  initializationOptions,
  readConfig,
  secretKeysIn,
  serverLaunch,
} from '../src/core/settings';

const getter = (values: Record<string, unknown>) => (key: string) => values[key];

describe('settings', () => {
  it('fills defaults and drops values of the wrong type', () => {
    const cfg = readConfig(getter({ 'server.args': ['a', 3, 'b'], settings: [1, 2], 'statusBar.warnRatio': 7 }));
    assert.deepEqual(cfg.serverArgs, ['a', 'b']);
    assert.deepEqual(cfg.settings, {});
    assert.equal(cfg.warnRatio, 1);
    assert.equal(cfg.hooksEnabled, true);
    assert.equal(cfg.hookTimeoutMs, 5000);
  });

  it('starts `python3 -m compactd serve` by default, the configured interpreter otherwise', () => {
    const env = { PATH: '/bin', UNSET: undefined };
    assert.deepEqual(serverLaunch(readConfig(getter({})), env), {
      command: 'python3',
      args: ['-m', 'compactd', 'serve'],
      env: { PATH: '/bin', PYTHONUNBUFFERED: '1' },
    });
    const withPy = serverLaunch(readConfig(getter({ interpreter: ' /venv/bin/python ', 'server.env': { X: '1', Y: 2 } })), env);
    assert.equal(withPy.command, '/venv/bin/python');
    assert.deepEqual(withPy.args, ['-m', 'compactd', 'serve']);
    assert.equal(withPy.env.X, '1');
    assert.equal(withPy.env.Y, undefined);
  });

  it('an explicit server command wins and defaults to the `serve` argument', () => {
    const l = serverLaunch(readConfig(getter({ interpreter: '/p', 'server.command': 'compactd' })), {});
    assert.equal(l.command, 'compactd');
    assert.deepEqual(l.args, ['serve']);
    const l2 = serverLaunch(readConfig(getter({ 'server.command': 'compactd', 'server.args': ['serve', '--log', 'debug'] })), {});
    assert.deepEqual(l2.args, ['serve', '--log', 'debug']);
  });

  it('maps settings to initializationOptions in the daemon\'s shape', () => {
    const cfg = readConfig(
      getter({
        settings: { compaction: { reserveTokens: 1000 } },
        summarizer: { backend: 'openai', baseUrl: 'http://127.0.0.1:1/v1', model: 'm', apiKeyEnv: 'K' },
        'hooks.timeoutMs': 250,
      }),
    );
    assert.deepEqual(initializationOptions(cfg, ['beforeTree', 'beforeCompact']), {
      settings: { compaction: { reserveTokens: 1000 } },
      summarizer: { backend: 'openai', baseUrl: 'http://127.0.0.1:1/v1', model: 'm', apiKeyEnv: 'K' },
      hooks: ['beforeCompact', 'beforeTree'],
      hookTimeoutMs: 250,
    });
    assert.deepEqual(didChangeConfigurationParams(cfg, ['compacting']).settings, initializationOptions(cfg, ['compacting']));
  });

  it('sends an empty summarizer as null (so clearing the setting takes effect) and no hooks when disabled', () => {
    const opts = initializationOptions(readConfig(getter({})));
    assert.equal(opts.summarizer, null);
    assert.deepEqual(opts.hooks, []);
    const off = initializationOptions(readConfig(getter({ 'hooks.enabled': false })), ['beforeCompact']);
    assert.deepEqual(off.hooks, []);
  });

  it('never forwards secrets put into settings', () => {
    const cfg = readConfig(
      getter({
        summarizer: { model: 'm', apiKey: 'sk-123', candidates: [{ model: 'x', api_key: 'sk-456' }] },
        settings: { compaction: { token: 't' } },
      }),
    );
    const opts = initializationOptions(cfg);
    assert.doesNotMatch(JSON.stringify(opts), /sk-123|sk-456|"t"/);
    assert.deepEqual(opts.summarizer, { model: 'm', candidates: [{ model: 'x' }] });
    assert.deepEqual(secretKeysIn(cfg).sort(), [
      'compactd.settings.compaction.token',
      'compactd.summarizer.apiKey',
      'compactd.summarizer.candidates[0].api_key',
    ]);
  });
});
