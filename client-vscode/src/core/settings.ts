// VS Code settings -> how to start the daemon and what to send it.
//
// The daemon takes the same object as `initializationOptions` at start and as the
// `settings` of workspace/didChangeConfiguration later: {settings, summarizer, hooks, hookTimeoutMs}.
// `settings` uses Pi's names (compaction, branchSummary, retry, pruning, summarizer) and is merged by
// the daemon over Pi's settings files; the client never interprets it.
import type { Env } from './sessionPaths';

export const HOOK_NAMES = ['beforeCompact', 'compacting', 'beforeTree'] as const;
export type HookName = (typeof HOOK_NAMES)[number];

export const DEFAULT_SERVER_MODULE_ARGS = ['-m', 'compactd', 'serve'] as const;
export const DEFAULT_HOOK_TIMEOUT_MS = 5000;

export interface ExtensionConfig {
  interpreter: string;
  serverCommand: string;
  serverArgs: string[];
  serverEnv: Record<string, string>;
  settings: Record<string, unknown>;
  summarizer: Record<string, unknown>;
  hooksEnabled: boolean;
  hookTimeoutMs: number;
  warnRatio: number;
}

/** Reads one key below `compactd.` (VS Code's WorkspaceConfiguration.get, or a plain object in tests). */
export type ConfigGetter = (key: string) => unknown;

function str(v: unknown, fallback = ''): string {
  return typeof v === 'string' ? v.trim() : fallback;
}

function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

function record(v: unknown): Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? { ...(v as Record<string, unknown>) } : {};
}

function stringRecord(v: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, val] of Object.entries(record(v))) if (typeof val === 'string') out[k] = val;
  return out;
}

function num(v: unknown, fallback: number, min: number, max: number): number {
  return typeof v === 'number' && Number.isFinite(v) ? Math.min(max, Math.max(min, v)) : fallback;
}

export function readConfig(get: ConfigGetter): ExtensionConfig {
  return {
    interpreter: str(get('interpreter')),
    serverCommand: str(get('server.command')),
    serverArgs: strings(get('server.args')),
    serverEnv: stringRecord(get('server.env')),
    settings: record(get('settings')),
    summarizer: record(get('summarizer')),
    hooksEnabled: get('hooks.enabled') !== false,
    hookTimeoutMs: num(get('hooks.timeoutMs'), DEFAULT_HOOK_TIMEOUT_MS, 0, 600_000),
    warnRatio: num(get('statusBar.warnRatio'), 0.9, 0, 1),
  };
}

export interface ServerLaunch {
  command: string;
  args: string[];
  env: Record<string, string>;
}

/** An explicit command wins; otherwise `<interpreter or python3> -m compactd serve`. */
export function serverLaunch(cfg: ExtensionConfig, baseEnv: Env = process.env): ServerLaunch {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(baseEnv)) if (v !== undefined) env[k] = v;
  Object.assign(env, cfg.serverEnv);
  // Unbuffered stderr, so log lines reach the output channel as they happen.
  env.PYTHONUNBUFFERED = '1';
  if (cfg.serverCommand !== '') {
    return { command: cfg.serverCommand, args: cfg.serverArgs.length > 0 ? cfg.serverArgs : ['serve'], env };
  }
  const command = cfg.interpreter !== '' ? cfg.interpreter : 'python3';
  const args = cfg.serverArgs.length > 0 ? cfg.serverArgs : [...DEFAULT_SERVER_MODULE_ARGS];
  return { command, args, env };
}

/** Keys that must never travel in settings: the daemon only accepts the NAME of a variable. */
const SECRET_KEY = /^(api[_-]?key|token|secret|password)$/i;

/** A copy without secret-looking keys, and the names of the keys that were removed. */
export function withoutSecrets(obj: Record<string, unknown>): { value: Record<string, unknown>; removed: string[] } {
  const removed: string[] = [];
  const walk = (v: unknown, path: string): unknown => {
    if (Array.isArray(v)) return v.map((x, i) => walk(x, `${path}[${i}]`));
    if (typeof v !== 'object' || v === null) return v;
    const out: Record<string, unknown> = {};
    for (const [k, val] of Object.entries(v as Record<string, unknown>)) {
      const p = path ? `${path}.${k}` : k;
      if (SECRET_KEY.test(k)) removed.push(p);
      else out[k] = walk(val, p);
    }
    return out;
  };
  return { value: walk(obj, '') as Record<string, unknown>, removed };
}

export interface InitializationOptions {
  settings: Record<string, unknown>;
  /** null: no override (Pi's settings files and the daemon's default choice apply). */
  summarizer: Record<string, unknown> | null;
  hooks: HookName[];
  hookTimeoutMs: number;
}

/**
 * `hooks`: the hooks some handler is registered for. Only those are declared, so the daemon does
 * not send (possibly large) hook requests nobody answers; see HookRegistry.onDidChangeActive.
 */
export function initializationOptions(cfg: ExtensionConfig, hooks: readonly HookName[] = []): InitializationOptions {
  const summarizer = withoutSecrets(cfg.summarizer).value;
  return {
    settings: withoutSecrets(cfg.settings).value,
    // Always present: the daemon replaces only the fields a configuration change carries, so an
    // emptied setting must be sent as null to take effect.
    summarizer: Object.keys(summarizer).length > 0 ? summarizer : null,
    hooks: cfg.hooksEnabled ? HOOK_NAMES.filter((h) => hooks.includes(h)) : [],
    hookTimeoutMs: cfg.hookTimeoutMs,
  };
}

/** Secret-looking keys the user put into settings (they are dropped; tell the user). */
export function secretKeysIn(cfg: ExtensionConfig): string[] {
  return [
    ...withoutSecrets(cfg.settings).removed.map((k) => `compactd.settings.${k}`),
    ...withoutSecrets(cfg.summarizer).removed.map((k) => `compactd.summarizer.${k}`),
  ];
}

/** The params of workspace/didChangeConfiguration. */
export function didChangeConfigurationParams(cfg: ExtensionConfig, hooks: readonly HookName[] = []): { settings: InitializationOptions } {
  return { settings: initializationOptions(cfg, hooks) };
}

/** Setting keys (below `compactd.`) whose change needs a new daemon process. */
export const RESTART_KEYS = ['interpreter', 'server.command', 'server.args', 'server.env'] as const;
/** Setting keys the running daemon takes through workspace/didChangeConfiguration. */
export const LIVE_KEYS = ['settings', 'summarizer', 'hooks.enabled', 'hooks.timeoutMs'] as const;
