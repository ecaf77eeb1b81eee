// Answers to the daemon's hook requests (session/beforeCompact, session/compacting,
// session/beforeTree), collected from any number of handlers that other extensions register
// through this extension's API. The combining rules match the daemon's own (spec H-1..H-4):
// handlers run in registration order; for beforeCompact/beforeTree each non-empty answer
// replaces the running result and `cancel` stops at once; for compacting the last non-empty
// answer wins; a handler that throws counts as no answer.
import type { CancellationToken } from 'vscode-jsonrpc';
import type { HookAnswer, HookEvent } from './protocol';
import { HOOK_NAMES } from './settings';
import type { HookName } from './settings';

export type HookHandler = (
  event: HookEvent,
  token: CancellationToken,
) => HookAnswer | undefined | Promise<HookAnswer | undefined>;

export function hookMethod(name: HookName): `session/${HookName}` {
  return `session/${name}`;
}

export function isHookName(value: unknown): value is HookName {
  return typeof value === 'string' && (HOOK_NAMES as readonly string[]).includes(value);
}

export class HookRegistry {
  private readonly handlers = new Map<HookName, { handler: HookHandler; owner: string }[]>();
  private readonly activeListeners = new Set<(active: HookName[]) => void>();

  constructor(private readonly onError: (hook: HookName, owner: string, error: unknown) => void = () => undefined) {}

  register(hook: HookName, handler: HookHandler, owner = 'anonymous'): { dispose(): void } {
    if (!isHookName(hook)) throw new Error(`unknown hook "${String(hook)}"; expected one of ${HOOK_NAMES.join(', ')}`);
    const list = this.handlers.get(hook) ?? [];
    const item = { handler, owner };
    list.push(item);
    this.handlers.set(hook, list);
    if (list.length === 1) this.fireActive();
    return {
      dispose: () => {
        const current = this.handlers.get(hook) ?? [];
        const rest = current.filter((h) => h !== item);
        this.handlers.set(hook, rest);
        if (current.length > 0 && rest.length === 0) this.fireActive();
      },
    };
  }

  count(hook: HookName): number {
    return this.handlers.get(hook)?.length ?? 0;
  }

  /** Hooks with at least one handler: what the client declares to the daemon. */
  active(): HookName[] {
    return HOOK_NAMES.filter((h) => this.count(h) > 0);
  }

  /** Fired when a hook gains its first handler or loses its last one. */
  onDidChangeActive(listener: (active: HookName[]) => void): { dispose(): void } {
    this.activeListeners.add(listener);
    return { dispose: () => this.activeListeners.delete(listener) };
  }

  private fireActive(): void {
    const active = this.active();
    for (const l of [...this.activeListeners]) l(active);
  }

  /** The combined answer; null means "no answer" (the daemon goes on with its default). */
  async dispatch(hook: HookName, event: HookEvent, token: CancellationToken): Promise<HookAnswer> {
    let result: HookAnswer = null;
    for (const { handler, owner } of [...(this.handlers.get(hook) ?? [])]) {
      if (token.isCancellationRequested) break;
      let answer: HookAnswer | undefined;
      try {
        answer = await handler(event, token);
      } catch (error) {
        this.onError(hook, owner, error);
        continue;
      }
      if (answer === undefined || answer === null || typeof answer !== 'object' || Array.isArray(answer)) continue;
      if (Object.keys(answer).length === 0) continue;
      result = answer;
      if (hook !== 'compacting' && answer.cancel === true) break;
    }
    return result;
  }
}
