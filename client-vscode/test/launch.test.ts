// Starting the daemon as the extension does, and what the user is told when that fails: real
// processes (the project's Python, a missing program, a Python that cannot import compactd).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { daemonArgs, describeLaunchFailure, lastLine, RestartBudget, spawnDaemon } from '../src/core/launch';
import { readConfig, serverLaunch } from '../src/core/settings';
import { pythonExecutable, repoRoot } from './support/paths';

const config = (values: Record<string, unknown>) => readConfig((key) => values[key]);

async function failure(values: Record<string, unknown>) {
  const cfg = config(values);
  const launch = serverLaunch(cfg);
  const proc = spawnDaemon(launch, { cwd: repoRoot(), clientPid: process.pid });
  proc.child.stdin?.end(); // a daemon that did start would exit at the end of its input
  const exit = await proc.exited;
  return { exit, failure: describeLaunchFailure(cfg, launch, exit, proc.stderr.value) };
}

describe('launch: the command line', () => {
  it('appends what language clients pass to a stdio server', () => {
    const launch = serverLaunch(config({ interpreter: '/opt/py/bin/python' }));
    assert.deepEqual([launch.command, ...daemonArgs(launch, 4242)], ['/opt/py/bin/python', '-m', 'compactd', 'serve', '--stdio', '--clientProcessId=4242']);
  });
});

describe('launch: failures a person can act on', { timeout: 60_000 }, () => {
  it('a Python without compactd: names the command, the error and the interpreter setting', async () => {
    // -S leaves site-packages (where compactd is installed) off the path: a Python without compactd.
    const { exit, failure: f } = await failure({ interpreter: pythonExecutable(), 'server.args': ['-S', '-m', 'compactd', 'serve'] });
    assert.equal(exit.code, 1);
    assert.equal(f.setting, 'compactd.interpreter');
    assert.equal(
      f.message,
      `\`${pythonExecutable()} -S -m compactd\` failed: No module named compactd. Set compactd.interpreter to a Python that has compactd installed (pip install compactd).`,
    );
  });

  it('a write that loses the race with the exit is dropped, not an EPIPE error', async () => {
    // A daemon that has stopped reading (closed its stdin, as an exiting process does) but whose
    // exit Node has not seen yet: the window in which the language client's first write fails.
    const script = 'import os, sys, time; os.close(0); sys.stderr.write("closed\\n"); sys.stderr.flush(); time.sleep(1)';
    const launch = serverLaunch(config({ interpreter: pythonExecutable(), 'server.args': ['-c', script] }));
    let ready: () => void = () => undefined;
    const closed = new Promise<void>((resolve) => (ready = resolve));
    const proc = spawnDaemon(launch, { cwd: repoRoot(), clientPid: process.pid, onStderr: (t) => t.includes('closed') && ready() });
    await closed;
    const stdin = proc.child.stdin;
    assert.ok(stdin);
    const events: unknown[] = [];
    stdin.on('error', (error) => events.push(error));
    // Two writes, as a message is framed: its header, then its body.
    const results = await Promise.all(
      ['Content-Length: 2\r\n\r\n', '{}'].map((text) => new Promise<unknown>((resolve) => stdin.write(text, 'ascii', resolve))),
    );
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(results, [null, null]);
    assert.deepEqual(events, []);
    assert.equal((await proc.exited).code, 0);
  });

  it('an interpreter that does not exist', async () => {
    const { exit, failure: f } = await failure({ interpreter: '/nonexistent/python3' });
    assert.equal(exit.spawnError?.code, 'ENOENT');
    assert.equal(f.setting, 'compactd.interpreter');
    assert.match(f.message, /^`\/nonexistent\/python3` could not be run: no such program\. Set compactd\.interpreter/);
  });

  it('a server command that rejects the arguments: its last stderr line and the command setting', async () => {
    const { failure: f } = await failure({ 'server.command': pythonExecutable(), 'server.args': ['-c', 'import sys; sys.exit("bad args: " + " ".join(sys.argv[1:]))'] });
    assert.equal(f.setting, 'compactd.server.command');
    assert.equal(f.message, `\`${pythonExecutable()}\` exited with status 1: bad args: --stdio --clientProcessId=${process.pid}. Set compactd.server.command to the compactd executable (and compactd.server.args if needed).`);
  });

  it('the real daemon accepts the command line and exits cleanly at the end of its input', async () => {
    const { exit } = await failure({ interpreter: pythonExecutable() });
    // Status 1: stdin closed without `shutdown` (protocol.md); not 2, the usage error.
    assert.equal(exit.code, 1);
  });

  it('takes the last non-empty line of an error output', () => {
    assert.equal(lastLine('Traceback:\n  x\nModuleNotFoundError: nope\n\n'), 'ModuleNotFoundError: nope');
    assert.equal(lastLine(''), '');
  });
});

describe('launch: automatic restarts', () => {
  it('allows three restarts in three minutes, then none until the window has passed', () => {
    let now = 0;
    const budget = new RestartBudget(3, 180_000, () => now);
    assert.deepEqual([budget.take(), budget.take(), budget.take(), budget.take()], [true, true, true, false]);
    now = 180_001;
    assert.equal(budget.take(), true);
  });
});
