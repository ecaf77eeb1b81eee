// A typed wrapper over any JSON-RPC endpoint that speaks to the compactd daemon.
//
// The endpoint is either vscode-languageclient's LanguageClient (in the extension) or a plain
// vscode-jsonrpc MessageConnection over a spawned process's stdio (in tests and other hosts):
// both offer the string-method forms of sendRequest/onNotification/onRequest and onProgress.
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { ProgressType } from 'vscode-jsonrpc';
import type { CancellationToken, Disposable, MessageConnection } from 'vscode-jsonrpc';
import { createMessageConnection, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';
import type {
  CompactParams,
  CompactResult,
  CompactionEndParams,
  CompactionStartParams,
  DidChangeParams,
  EntryResult,
  ForkParams,
  ForkResult,
  HookAnswer,
  HookEvent,
  LabelParams,
  LabelResult,
  ListFilesParams,
  ListFilesResult,
  NavigateParams,
  NavigateResult,
  OpenResult,
  PrepareCompactionParams,
  PrepareCompactionResult,
  PruneResult,
  TokenStats,
  TreePageParams,
  TreePageResult,
  TreeResult,
} from './protocol';
import { Methods, REQUEST_CANCELLED } from './protocol';

/** The part of LanguageClient / MessageConnection this wrapper needs. */
export interface RpcEndpoint {
  sendRequest<R>(method: string, params: unknown, token?: CancellationToken): Promise<R>;
  sendNotification(method: string, params?: unknown): Promise<void> | void;
  onNotification<P>(method: string, handler: (params: P) => void): Disposable;
  onRequest<P, R>(method: string, handler: (params: P, token: CancellationToken) => R | Promise<R>): Disposable;
  onProgress<P>(type: ProgressType<P>, token: string | number, handler: (params: P) => void): Disposable;
}

/** LSP work-done progress values; `text` carries the summary streamed so far. */
export interface WorkDoneProgressValue {
  kind: 'begin' | 'report' | 'end';
  title?: string;
  message?: string;
  percentage?: number;
  cancellable?: boolean;
  text?: string;
  [key: string]: unknown;
}

export const workDoneProgressType = new ProgressType<WorkDoneProgressValue>();

export interface LongRunningOptions {
  token?: CancellationToken;
  onProgress?: (value: WorkDoneProgressValue) => void;
}

export type HookMethod = typeof Methods.beforeCompact | typeof Methods.compacting | typeof Methods.beforeTree;

export class CompactdClient {
  // vscode-jsonrpc keeps ONE handler per notification method (a second onNotification replaces
  // the first), so each method gets one endpoint handler that fans out to every listener here.
  private readonly listeners = new Map<string, Set<(params: never) => void>>();
  private readonly endpointSubs: Disposable[] = [];

  constructor(private readonly endpoint: RpcEndpoint) {}

  /** Stop listening on the endpoint (the endpoint itself stays open). */
  dispose(): void {
    for (const d of this.endpointSubs.splice(0)) d.dispose();
    this.listeners.clear();
  }

  open(path: string): Promise<OpenResult> {
    return this.request(Methods.open, { path });
  }

  /** Session files of Pi's folder for `cwd` (newest first), or of `dir`. */
  listFiles(params: ListFilesParams): Promise<ListFilesResult> {
    return this.request(Methods.listFiles, params);
  }

  close(sessionId: string): Promise<unknown> {
    return this.request(Methods.close, { sessionId });
  }

  tree(sessionId: string): Promise<TreeResult> {
    return this.request(Methods.tree, { sessionId });
  }

  /** Pages of the panel's lists (session/tree with `limit`). */
  treePage(params: TreePageParams): Promise<TreePageResult> {
    return this.request(Methods.tree, params);
  }

  context(sessionId: string, leafId?: string | null): Promise<Record<string, unknown>> {
    return this.request(Methods.context, withLeaf({ sessionId }, leafId));
  }

  entry(sessionId: string, entryId: string): Promise<EntryResult> {
    return this.request(Methods.entry, { sessionId, entryId });
  }

  tokenStats(sessionId: string, leafId?: string | null): Promise<TokenStats> {
    return this.request(Methods.tokenStats, withLeaf({ sessionId }, leafId));
  }

  /** null when nothing would be compacted. */
  prepareCompaction(params: PrepareCompactionParams): Promise<PrepareCompactionResult | null> {
    return this.request(Methods.prepareCompaction, params);
  }

  label(params: LabelParams): Promise<LabelResult> {
    return this.request(Methods.label, params);
  }

  fork(params: ForkParams): Promise<ForkResult> {
    return this.request(Methods.fork, params);
  }

  /** With dryRun: only the plan (what would be pruned). */
  prune(sessionId: string, dryRun = false): Promise<PruneResult> {
    return this.request(Methods.prune, { sessionId, dryRun });
  }

  abort(sessionId: string): Promise<unknown> {
    return this.request(Methods.abort, { sessionId });
  }

  /** Compact now. Cancelling `opts.token` sends $/cancelRequest; the promise then rejects with
   * a ResponseError whose code is REQUEST_CANCELLED (see isCancelled). */
  compact(params: Omit<CompactParams, 'workDoneToken'>, opts: LongRunningOptions = {}): Promise<CompactResult> {
    return this.longRunning(Methods.compact, params, opts);
  }

  navigate(params: Omit<NavigateParams, 'workDoneToken'>, opts: LongRunningOptions = {}): Promise<NavigateResult> {
    return this.longRunning(Methods.navigate, params, opts);
  }

  onDidChange(handler: (params: DidChangeParams) => void): Disposable {
    return this.listen(Methods.didChange, handler);
  }

  onCompactionStart(handler: (params: CompactionStartParams) => void): Disposable {
    return this.listen(Methods.compactionStart, handler);
  }

  onCompactionEnd(handler: (params: CompactionEndParams) => void): Disposable {
    return this.listen(Methods.compactionEnd, handler);
  }

  /** Answer a server-to-client hook request (only sent when declared in initializationOptions.hooks). */
  onHook(method: HookMethod, handler: (event: HookEvent, token: CancellationToken) => Promise<HookAnswer>): Disposable {
    return this.endpoint.onRequest(method, handler);
  }

  private listen<P>(method: string, handler: (params: P) => void): Disposable {
    let set = this.listeners.get(method);
    if (set === undefined) {
      const created = new Set<(params: never) => void>();
      set = created;
      this.listeners.set(method, created);
      this.endpointSubs.push(
        this.endpoint.onNotification<never>(method, (params) => {
          for (const l of [...created]) {
            try {
              l(params);
            } catch {
              // One listener's failure must not starve the others.
            }
          }
        }),
      );
    }
    const entry = handler as (params: never) => void;
    set.add(entry);
    return { dispose: () => set.delete(entry) };
  }

  private request<R>(method: string, params: object, token?: CancellationToken): Promise<R> {
    // vscode-jsonrpc counts arguments: an explicit `undefined` token would turn the params object
    // into a positional array [params, null].
    return token === undefined ? this.endpoint.sendRequest<R>(method, params) : this.endpoint.sendRequest<R>(method, params, token);
  }

  private async longRunning<R>(method: string, params: object, opts: LongRunningOptions): Promise<R> {
    const workDoneToken = `compactd-${randomUUID()}`;
    const onProgress = opts.onProgress;
    // Register before sending: the first report can arrive before the response.
    const sub = onProgress ? this.endpoint.onProgress(workDoneProgressType, workDoneToken, onProgress) : undefined;
    try {
      return await this.request<R>(method, { ...params, workDoneToken }, opts.token);
    } finally {
      sub?.dispose();
    }
  }
}

function withLeaf<T extends object>(params: T, leafId: string | null | undefined): T & { leafId?: string | null } {
  return leafId === undefined ? params : { ...params, leafId };
}

/** The JSON-RPC error code of a rejection, if it has one. */
export function errorCode(error: unknown): number | undefined {
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  return typeof code === 'number' ? code : undefined;
}

/** Was this rejection the daemon's answer to $/cancelRequest? */
export function isCancelled(error: unknown): boolean {
  return errorCode(error) === REQUEST_CANCELLED;
}

export function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (typeof error === 'object' && error !== null && typeof (error as { message?: unknown }).message === 'string') {
    return (error as { message: string }).message;
  }
  return String(error);
}

// --- plain-Node hosting: a daemon process over stdio -------------------------------------------

/** A MessageConnection over a spawned daemon's stdin/stdout (LSP framing). Call `listen()` on it. */
export function connectToProcess(child: ChildProcess): MessageConnection {
  if (!child.stdout || !child.stdin) throw new Error('the daemon process needs piped stdin and stdout');
  return createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
}

export interface InitializeOptions {
  initializationOptions?: unknown;
  rootUri?: string | null;
  clientName?: string;
}

/** The LSP handshake: `initialize` then `initialized`. Returns the server's InitializeResult. */
export async function initialize(connection: MessageConnection, opts: InitializeOptions = {}): Promise<Record<string, unknown>> {
  const result = await connection.sendRequest<Record<string, unknown>>('initialize', {
    processId: process.pid,
    clientInfo: { name: opts.clientName ?? 'compactd-vscode' },
    rootUri: opts.rootUri ?? null,
    capabilities: { window: { workDoneProgress: true } },
    initializationOptions: opts.initializationOptions ?? {},
  });
  await connection.sendNotification('initialized', {});
  return result;
}

/** The LSP goodbye: `shutdown` then `exit`. */
export async function shutdown(connection: MessageConnection): Promise<void> {
  await connection.sendRequest('shutdown');
  await connection.sendNotification('exit');
}
