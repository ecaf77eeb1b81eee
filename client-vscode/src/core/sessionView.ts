// The state behind the side panel and the status bar: which session is open, its tree model
// and token figures. It reloads only when the daemon says something changed
// (session/didChange, session/compactionEnd) or the user asks; overlapping reloads coalesce.
import { Emitter } from 'vscode-jsonrpc';
import type { Disposable, Event } from 'vscode-jsonrpc';
import { LazyTreeModel } from './lazyTree';
import type { DidChangeParams, OpenResult, TokenStats } from './protocol';
import { errorMessage } from './protocolClient';
import type { CompactdClient } from './protocolClient';
import type { MoreRows } from './treeModel';

/** Rows per list and page: more than a panel shows at once, far fewer than a long session has. */
export const TREE_PAGE = 200;

export interface SessionSnapshot {
  readonly path: string;
  readonly info: OpenResult;
  readonly model: LazyTreeModel;
  /** Undefined when the daemon could not compute them (e.g. a settings error); see statsError. */
  readonly stats: TokenStats | undefined;
  readonly statsError: string | undefined;
}

export class SessionView {
  private client: CompactdClient | undefined;
  private subscriptions: Disposable[] = [];
  private current: { path: string; info: OpenResult } | undefined;
  // The file to open again on the next connection, kept until it is open: a connection lost
  // while reopening (a daemon dying twice) must not make the panel forget it.
  private reopenPath: string | undefined;
  private _snapshot: SessionSnapshot | undefined;
  private inflight: Promise<void> | undefined;
  private again = false;
  private readonly updateEmitter = new Emitter<SessionSnapshot | undefined>();
  private readonly errorEmitter = new Emitter<unknown>();

  /** Fired after every reload (and with undefined when the session is closed). */
  readonly onDidUpdate: Event<SessionSnapshot | undefined> = this.updateEmitter.event;
  /** A reload that failed (the panel keeps showing the last good state). */
  readonly onDidFail: Event<unknown> = this.errorEmitter.event;

  get snapshot(): SessionSnapshot | undefined {
    return this._snapshot;
  }

  get sessionId(): string | undefined {
    return this.current?.info.sessionId;
  }

  get path(): string | undefined {
    return this.current?.path ?? this.reopenPath;
  }

  /** Use a (new) daemon connection. Session ids do not survive a restart, so the open file is
   * opened again on the new connection. */
  async attach(client: CompactdClient): Promise<void> {
    for (const d of this.subscriptions) d.dispose();
    this.client = client;
    this.subscriptions = [
      client.onDidChange((p) => this.onServerChange(p.sessionId, p)),
      client.onCompactionEnd((p) => this.onServerChange(p.sessionId)),
    ];
    const path = this.path;
    if (path !== undefined) {
      this.current = undefined;
      this.reopenPath = path;
      await this.open(path);
    }
  }

  /** The connection is gone: drop the figures (they would go stale) but remember the file, so
   * the next attach opens it again. */
  detach(): void {
    for (const d of this.subscriptions) d.dispose();
    this.subscriptions = [];
    this.client = undefined;
    if (this._snapshot !== undefined) {
      this._snapshot = undefined;
      this.updateEmitter.fire(undefined);
    }
  }

  async open(path: string): Promise<SessionSnapshot> {
    const client = this.requireClient();
    const previous = this.current;
    const info = await client.open(path);
    if (previous !== undefined && previous.info.sessionId !== info.sessionId) {
      // Release the old one; a failure here must not hide the newly opened session.
      client.close(previous.info.sessionId).catch(() => undefined);
    }
    this.current = { path, info };
    this.reopenPath = undefined;
    await this.refresh();
    return this._snapshot!;
  }

  async close(): Promise<void> {
    const previous = this.current;
    this.current = undefined;
    this.reopenPath = undefined;
    this._snapshot = undefined;
    this.updateEmitter.fire(undefined);
    if (previous !== undefined && this.client !== undefined) {
      await this.client.close(previous.info.sessionId).catch(() => undefined);
    }
  }

  /** Reload tree and token figures. Calls made while a reload runs cause one more reload after it. */
  refresh(): Promise<void> {
    if (this.inflight !== undefined) {
      this.again = true;
      return this.inflight;
    }
    this.inflight = (async () => {
      try {
        do {
          this.again = false;
          await this.load();
        } while (this.again);
      } finally {
        this.inflight = undefined;
      }
    })();
    return this.inflight;
  }

  private onServerChange(sessionId: string, change?: DidChangeParams): void {
    if (sessionId !== this.current?.info.sessionId) return;
    const snap = this._snapshot;
    // Appended entries extend the panel in place; anything else fetches the leaf's screen again.
    if (change !== undefined && snap !== undefined && this.inflight === undefined && snap.model.applyChange(change)) {
      // One update with the new rows and their token figures (as a reload gives).
      this.refreshStats().catch((error: unknown) => {
        this.errorEmitter.fire(error);
      });
      return;
    }
    this.refresh().catch((error: unknown) => {
      this.errorEmitter.fire(error);
    });
  }

  /** Load one more page where a list is cut ("Earlier entries…"). */
  async loadMore(more: MoreRows): Promise<void> {
    const { client, snap } = this.loaded();
    const page = await client.treePage({ sessionId: snap.info.sessionId, limit: TREE_PAGE, branch: more.list, [more.direction]: more.cursor });
    if (this._snapshot?.model !== snap.model) return;
    snap.model.addPage(page.lists[0], more.direction);
    this.updateEmitter.fire(snap);
  }

  /** Fetch a branch's list the first time its group is expanded; false when nothing was needed. */
  async loadBranch(groupId: string): Promise<boolean> {
    const snap = this._snapshot;
    const first = snap?.model.needsLoad(groupId);
    if (snap === undefined || first === undefined) return false;
    const { client } = this.loaded();
    const page = await client.treePage({ sessionId: snap.info.sessionId, limit: TREE_PAGE, branch: first });
    if (this._snapshot?.model !== snap.model) return false;
    snap.model.addPage(page.lists[0], 'first');
    return true;
  }

  private loaded(): { client: CompactdClient; snap: SessionSnapshot } {
    const client = this.requireClient();
    const snap = this._snapshot;
    if (snap === undefined) throw new Error('no session is open');
    return { client, snap };
  }

  private async refreshStats(): Promise<void> {
    const snap = this._snapshot;
    const client = this.client;
    if (snap === undefined || client === undefined) return;
    const stats = await client.tokenStats(snap.info.sessionId).then(
      (s) => ({ stats: s, error: undefined }),
      (e: unknown) => ({ stats: undefined, error: errorMessage(e) }),
    );
    if (this._snapshot !== snap) return;
    this._snapshot = { ...snap, stats: stats.stats, statsError: stats.error };
    this.updateEmitter.fire(this._snapshot);
  }

  private async load(): Promise<void> {
    const current = this.current;
    const client = this.client;
    if (current === undefined || client === undefined) return;
    const id = current.info.sessionId;
    const [tree, stats] = await Promise.all([
      client.treePage({ sessionId: id, limit: TREE_PAGE }),
      client.tokenStats(id).then(
        (s) => ({ stats: s, error: undefined }),
        (e: unknown) => ({ stats: undefined, error: errorMessage(e) }),
      ),
    ]);
    if (this.current !== current) return; // another session was opened meanwhile
    this._snapshot = {
      path: current.path,
      info: current.info,
      model: new LazyTreeModel(tree),
      stats: stats.stats,
      statsError: stats.error,
    };
    this.updateEmitter.fire(this._snapshot);
  }

  private requireClient(): CompactdClient {
    if (this.client === undefined) throw new Error('the compactd daemon is not running');
    return this.client;
  }

  dispose(): void {
    this.detach();
    this.updateEmitter.dispose();
    this.errorEmitter.dispose();
  }
}
