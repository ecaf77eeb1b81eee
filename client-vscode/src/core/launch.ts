// Starting the daemon process and explaining, in words a person can act on, why it did not start.
// vscode-free: the extension hands the child process to vscode-languageclient; tests spawn it directly.
import { spawn } from 'node:child_process';
import type { Writable } from 'node:stream';
import type { ChildProcess } from 'node:child_process';
import type { ExtensionConfig, ServerLaunch } from './settings';

/** What language clients append to a stdio server's command line; `compactd serve` accepts both. */
export function daemonArgs(launch: ServerLaunch, clientPid: number): string[] {
  return [...launch.args, '--stdio', `--clientProcessId=${clientPid}`];
}

/** The last few kilobytes of the daemon's stderr (the reason it died is at the end). */
export class StderrTail {
  private text = '';
  constructor(private readonly max = 8192) {}

  push(chunk: string): void {
    this.text = (this.text + chunk).slice(-this.max);
  }

  get value(): string {
    return this.text;
  }
}

export interface ExitInfo {
  /** Set when the process could not be spawned at all (e.g. ENOENT: no such program). */
  readonly spawnError?: NodeJS.ErrnoException;
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface DaemonProcess {
  readonly child: ChildProcess;
  readonly stderr: StderrTail;
  /** Resolves when the process has exited (or failed to spawn). */
  readonly exited: Promise<ExitInfo>;
}

/** Spawn `launch` with stdio pipes; stderr is kept in `stderr` and passed to `onStderr`. */
export function spawnDaemon(
  launch: ServerLaunch,
  options: { cwd?: string; clientPid: number; onStderr?: (text: string) => void },
): DaemonProcess {
  const child = spawn(launch.command, daemonArgs(launch, options.clientPid), {
    cwd: options.cwd,
    env: launch.env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  if (child.stdin) dropWritesAfterExit(child.stdin);
  const stderr = new StderrTail();
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (text: string) => {
    stderr.push(text);
    options.onStderr?.(text);
  });
  const exited = new Promise<ExitInfo>((resolve) => {
    child.once('error', (error: NodeJS.ErrnoException) => resolve({ spawnError: error, code: null, signal: null }));
    // 'close' (not 'exit'): stderr has been read to its end by then.
    child.once('close', (code, signal) => resolve({ code, signal }));
  });
  return { child, stderr, exited };
}

/**
 * A write that loses the race with the daemon's exit (it could not start, or it crashed) fails with
 * EPIPE, and the language client's writer leaves that failure as an unhandled rejection in the
 * extension host's log. The exit itself is what gets reported (the connection closes and the user
 * is told why from stderr and the exit status), so such a write is dropped instead; any other
 * write error still fails the write.
 */
function dropWritesAfterExit(stdin: Writable): void {
  const keepOthers = (callback: (error?: Error | null) => void) => (error?: NodeJS.ErrnoException | null) =>
    callback(error?.code === 'EPIPE' ? null : error);
  const write = stdin._write.bind(stdin);
  stdin._write = (chunk, encoding, callback) => write(chunk, encoding, keepOthers(callback));
  const writev = stdin._writev?.bind(stdin);
  if (writev) stdin._writev = (chunks, callback) => writev(chunks, keepOthers(callback));
}

export type LaunchSetting = 'compactd.interpreter' | 'compactd.server.command';

export interface LaunchFailure {
  /** One sentence or two: what failed and what to change. */
  readonly message: string;
  /** The setting that fixes it (the notification's button opens it). */
  readonly setting: LaunchSetting;
}

/** The most telling line of a Python or shell error output: the last non-empty one. */
export function lastLine(text: string): string {
  const lines = text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '');
  return lines.length > 0 ? lines[lines.length - 1] : '';
}

/** "`/usr/bin/python3 -m compactd` failed: No module named compactd. Set compactd.interpreter …" */
export function describeLaunchFailure(cfg: ExtensionConfig, launch: ServerLaunch, exit: ExitInfo, stderr: string): LaunchFailure {
  const viaInterpreter = cfg.serverCommand === '';
  const setting: LaunchSetting = viaInterpreter ? 'compactd.interpreter' : 'compactd.server.command';
  // `python3 -m compactd` (without the subcommand), or the configured executable alone.
  const serveAt = launch.args.indexOf('serve');
  const shown = viaInterpreter ? [launch.command, ...launch.args.slice(0, serveAt >= 0 ? serveAt : launch.args.length)].join(' ') : launch.command;
  const fix = viaInterpreter
    ? 'Set compactd.interpreter to a Python that has compactd installed (pip install compactd).'
    : 'Set compactd.server.command to the compactd executable (and compactd.server.args if needed).';
  if (exit.spawnError !== undefined) {
    const why = exit.spawnError.code === 'ENOENT' ? 'no such program' : exit.spawnError.code === 'EACCES' ? 'permission denied' : exit.spawnError.message;
    return { message: `\`${launch.command}\` could not be run: ${why}. ${fix}`, setting };
  }
  const missing = /No module named '?compactd'?/.exec(stderr);
  if (missing !== null) return { message: `\`${shown}\` failed: No module named compactd. ${fix}`, setting };
  const how = exit.signal !== null ? `was killed by ${exit.signal}` : `exited with status ${exit.code ?? '?'}`;
  const detail = lastLine(stderr);
  return { message: `\`${shown}\` ${how}${detail !== '' ? `: ${detail}` : ''}. ${fix}`, setting };
}

/** How the extension decides about a daemon that stopped by itself: restart it a few times, then give up. */
export class RestartBudget {
  private readonly times: number[] = [];
  constructor(
    private readonly max = 3,
    private readonly windowMs = 180_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** True when another automatic restart is allowed now (and records it). */
  take(): boolean {
    const t = this.now();
    while (this.times.length > 0 && t - this.times[0] > this.windowMs) this.times.shift();
    if (this.times.length >= this.max) return false;
    this.times.push(t);
    return true;
  }
}
