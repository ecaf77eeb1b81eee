// Progress and cancellation of one long request (compaction, navigation with a summary).
//
//   idle --start--> running --cancel--> cancelling --finish--> done
//                      \______________________finish__________/
//
// The operation owns the CancellationTokenSource whose token goes into sendRequest, so
// cancel() makes vscode-jsonrpc send $/cancelRequest. It collects the $/progress reports:
// the percentage (never going backwards) and the summary text streamed so far.
import { CancellationTokenSource } from 'vscode-jsonrpc';
import type { CancellationToken } from 'vscode-jsonrpc';
import { errorMessage, isCancelled } from './protocolClient';
import type { WorkDoneProgressValue } from './protocolClient';

export type OperationState = 'idle' | 'running' | 'cancelling' | 'done';
export type Outcome = 'completed' | 'cancelled' | 'failed';

export type OperationResult<T> =
  | { outcome: 'completed'; value: T }
  | { outcome: 'cancelled' }
  | { outcome: 'failed'; error: unknown; message: string };

type Listener = (op: Operation) => void;

export class Operation {
  private _state: OperationState = 'idle';
  private _outcome: Outcome | undefined;
  private _message = '';
  private _percentage: number | undefined;
  private _text = '';
  private reportedPercentage = 0;
  private readonly source = new CancellationTokenSource();
  private readonly listeners = new Set<Listener>();

  constructor(readonly title: string) {}

  get state(): OperationState {
    return this._state;
  }
  get outcome(): Outcome | undefined {
    return this._outcome;
  }
  get message(): string {
    return this._message;
  }
  get percentage(): number | undefined {
    return this._percentage;
  }
  /** The summary text streamed so far. */
  get text(): string {
    return this._text;
  }
  get token(): CancellationToken {
    return this.source.token;
  }
  get active(): boolean {
    return this._state === 'running' || this._state === 'cancelling';
  }

  onDidChange(listener: Listener): { dispose(): void } {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  start(): void {
    if (this._state !== 'idle') throw new Error(`cannot start an operation that is ${this._state}`);
    this._state = 'running';
    this.fire();
  }

  /** Apply one $/progress value. Reports after the end are ignored. */
  report(value: WorkDoneProgressValue): void {
    if (!this.active) return;
    if (typeof value.message === 'string' && value.message !== '') this._message = value.message;
    if (typeof value.percentage === 'number' && Number.isFinite(value.percentage)) {
      const p = Math.max(0, Math.min(100, value.percentage));
      this._percentage = Math.max(this._percentage ?? 0, p);
    }
    if (typeof value.text === 'string') this._text = value.text;
    this.fire();
  }

  /** Ask the daemon to stop. Returns false when there is nothing to cancel. */
  cancel(): boolean {
    if (this._state !== 'running') return false;
    this._state = 'cancelling';
    this.source.cancel();
    this.fire();
    return true;
  }

  finish(outcome: Outcome): void {
    if (this._state === 'done') return;
    this._state = 'done';
    this._outcome = outcome;
    if (outcome === 'completed') this._percentage = 100;
    this.fire();
    this.source.dispose();
  }

  /** Percentage points gained since the last call (VS Code's progress API adds increments). */
  takeIncrement(): number {
    const now = this._percentage ?? 0;
    const inc = Math.max(0, now - this.reportedPercentage);
    this.reportedPercentage = Math.max(this.reportedPercentage, now);
    return inc;
  }

  /** One line for a progress notification: the status, then the end of the streamed summary. */
  displayMessage(maxChars = 100): string {
    if (this._state === 'cancelling') return 'Cancelling…';
    const tail = this._text.replace(/\s+/g, ' ').trim();
    if (tail === '') return this._message;
    const cut = tail.length > maxChars ? `…${tail.slice(tail.length - maxChars + 1)}` : tail;
    return this._message ? `${this._message}: ${cut}` : cut;
  }

  /** Drive the whole life cycle around one request. */
  async run<T>(request: (token: CancellationToken, onProgress: (v: WorkDoneProgressValue) => void) => Promise<T>): Promise<OperationResult<T>> {
    this.start();
    try {
      const value = await request(this.token, (v) => this.report(v));
      this.finish('completed');
      return { outcome: 'completed', value };
    } catch (error) {
      if (isCancelled(error) || (this._state === 'cancelling' && this.token.isCancellationRequested)) {
        this.finish('cancelled');
        return { outcome: 'cancelled' };
      }
      this.finish('failed');
      return { outcome: 'failed', error, message: errorMessage(error) };
    }
  }

  private fire(): void {
    for (const l of [...this.listeners]) l(this);
  }
}

/** Every operation in flight; drives the `compactd.operationRunning` context key. */
export class OperationRegistry {
  private readonly running = new Set<Operation>();
  private readonly listeners = new Set<(anyRunning: boolean) => void>();

  get anyRunning(): boolean {
    return this.running.size > 0;
  }

  get operations(): readonly Operation[] {
    return [...this.running];
  }

  onDidChangeRunning(listener: (anyRunning: boolean) => void): { dispose(): void } {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  /** A new operation, tracked from its start until it is done. */
  create(title: string): Operation {
    const op = new Operation(title);
    op.onDidChange(() => {
      const before = this.running.size;
      if (op.active) this.running.add(op);
      else this.running.delete(op);
      if ((before > 0) !== (this.running.size > 0)) this.fireRunning();
    });
    return op;
  }

  /** Cancel everything in flight (the Escape key). Returns how many were asked to stop. */
  cancelAll(): number {
    let n = 0;
    for (const op of [...this.running]) if (op.cancel()) n++;
    return n;
  }

  private fireRunning(): void {
    const any = this.anyRunning;
    for (const l of [...this.listeners]) l(any);
  }
}
