// The real daemon, started as the extension starts it, over stdio with the LSP handshake done.
import { spawnDaemon } from '../../src/core/launch';
import { readConfig, serverLaunch } from '../../src/core/settings';
import type { ChildProcess, ChildProcessWithoutNullStreams } from 'node:child_process';
import type { MessageConnection } from 'vscode-jsonrpc';
import { CompactdClient, connectToProcess, initialize, shutdown } from '../../src/core/protocolClient';
import { pythonExecutable, repoRoot, tempDir } from './paths';

export interface Daemon {
  readonly proc: ChildProcess;
  readonly connection: MessageConnection;
  readonly client: CompactdClient;
  readonly initializeResult: Record<string, unknown>;
  /** Everything the daemon wrote to stderr (its log). */
  stderr(): string;
  stop(): Promise<void>;
}

export interface DaemonOptions {
  initializationOptions?: Record<string, unknown>;
  env?: Record<string, string>;
  /** Register handlers (e.g. hook requests) before the handshake. */
  beforeInitialize?: (client: CompactdClient, connection: MessageConnection) => void;
}

/** Variables that would make the daemon pick a networked summarizer or read the user's settings. */
const SCRUBBED = ['OPENAI_API_KEY', 'OPENAI_BASE_URL', 'COMPACTD_MODEL', 'COMPACTD_SUMMARIZER', 'PI_CODING_AGENT_DIR'];

export async function startDaemon(opts: DaemonOptions = {}): Promise<Daemon> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !SCRUBBED.includes(k)) env[k] = v;
  // An empty agent dir: no ~/.pi settings leak into the tests.
  env.PI_CODING_AGENT_DIR = tempDir('compactd-agent-');
  env.PYTHONUNBUFFERED = '1';
  Object.assign(env, opts.env ?? {});
  // Launched exactly as the extension launches it: `<interpreter> -m compactd serve --stdio --clientProcessId=<pid>`.
  const launch = serverLaunch(readConfig((key) => (key === 'interpreter' ? pythonExecutable() : undefined)), env);
  let log = '';
  const daemon = spawnDaemon(launch, { cwd: repoRoot(), clientPid: process.pid, onStderr: (chunk) => (log += chunk) });
  const proc = daemon.child as ChildProcessWithoutNullStreams;
  const exited = daemon.exited.then((e) => e.code);
  const spawnError = daemon.exited.then((e) => {
    if (e.spawnError !== undefined) throw e.spawnError;
    return new Promise<never>(() => undefined);
  });
  const connection = connectToProcess(proc);
  const client = new CompactdClient(connection);
  opts.beforeInitialize?.(client, connection);
  connection.listen();
  let initializeResult: Record<string, unknown>;
  try {
    initializeResult = await Promise.race([
      initialize(connection, { initializationOptions: opts.initializationOptions ?? {} }),
      spawnError,
      exited.then((code) => {
        throw new Error(`daemon exited (${code}) during initialize:\n${log}`);
      }),
    ]);
  } catch (error) {
    proc.kill();
    throw error;
  }
  return {
    proc,
    connection,
    client,
    initializeResult,
    stderr: () => log,
    async stop() {
      if (proc.exitCode === null) {
        await Promise.race([shutdown(connection).catch(() => undefined), new Promise((r) => setTimeout(r, 3000))]);
      }
      const timer = setTimeout(() => proc.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
      connection.dispose();
    },
  };
}

/** Resolve when `predicate` holds for a notification; for awaiting daemon events without sleeping. */
export function nextEvent<T>(subscribe: (handler: (p: T) => void) => { dispose(): void }, predicate: (p: T) => boolean = () => true): Promise<T> {
  return new Promise((resolve) => {
    const sub = subscribe((p) => {
      if (predicate(p)) {
        sub.dispose();
        resolve(p);
      }
    });
  });
}
