// Starts, stops and restarts the daemon through vscode-languageclient (stdio, LSP framing).
// Each start makes a fresh LanguageClient; listeners re-attach through onDidStart.
//
// Failures are this class's to tell: the language client only logs (its own notifications say
// "couldn't create connection" five times over). A daemon that cannot start produces one
// notification saying why and which setting to change; one that dies later is restarted a few
// times quietly, then reported once.
import * as vscode from 'vscode';
import { CloseAction, ErrorAction, LanguageClient, RevealOutputChannelOn, State } from 'vscode-languageclient/node';
import type { CancellationToken, LanguageClientOptions, ServerOptions } from 'vscode-languageclient/node';
import { CompactdClient } from './core/protocolClient';
import type { RpcEndpoint } from './core/protocolClient';
import { hookMethod } from './core/hooks';
import type { HookRegistry } from './core/hooks';
import { describeLaunchFailure, RestartBudget, spawnDaemon } from './core/launch';
import type { DaemonProcess, LaunchFailure, LaunchSetting } from './core/launch';
import { didChangeConfigurationParams, HOOK_NAMES, initializationOptions, readConfig, secretKeysIn, serverLaunch } from './core/settings';
import type { ExtensionConfig, ServerLaunch } from './core/settings';

export function currentConfig(): ExtensionConfig {
  const section = vscode.workspace.getConfiguration('compactd');
  return readConfig((key) => section.get(key));
}

export type ServerStatus =
  | { readonly state: 'idle' | 'starting' | 'running' }
  | { readonly state: 'failed'; readonly message: string; readonly setting?: LaunchSetting };

/** Thrown by ensureStarted when the daemon could not start; the user has been told already. */
export class DaemonStartError extends Error {
  readonly reported = true;
}

/**
 * A LanguageClient that logs its errors without notifications (ServerManager notifies) and leaves
 * no promise rejection unobserved when the server dies during `initialize`: vscode-languageclient
 * then stops itself while still starting (which rejects with "Client is not running and can't be
 * stopped") and may resolve start() while the start promise it first made rejects unseen.
 */
class QuietLanguageClient extends LanguageClient {
  override error(message: string, data?: unknown, _showNotification?: boolean | 'force'): void {
    super.error(message, data, false);
  }

  override start(): Promise<void> {
    const started = super.start();
    // The promise the base class keeps while starting (set synchronously above); observe it.
    (this as unknown as { _onStart?: Promise<void> })._onStart?.catch(() => undefined);
    return started;
  }

  override stop(timeout?: number): Promise<void> {
    return super.stop(timeout).catch((error: unknown) => {
      if (this.state === State.Running) throw error;
      this.info(`nothing to stop: ${String(error)}`);
    });
  }
}

export class ServerManager implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private api: CompactdClient | undefined;
  private process: DaemonProcess | undefined;
  private readonly startEmitter = new vscode.EventEmitter<CompactdClient>();
  private readonly stopEmitter = new vscode.EventEmitter<void>();
  private readonly statusEmitter = new vscode.EventEmitter<ServerStatus>();
  private starting: Promise<CompactdClient> | undefined;
  // Restarts run one after another: each waits for the start before it to settle.
  private restarting: Promise<unknown> = Promise.resolve();
  private _status: ServerStatus = { state: 'idle' };

  /** Fired each time a daemon process is up (also after an automatic restart), with the typed client. */
  readonly onDidStart = this.startEmitter.event;
  readonly onDidStop = this.stopEmitter.event;
  readonly onDidChangeStatus: vscode.Event<ServerStatus> = this.statusEmitter.event;

  constructor(
    private readonly output: vscode.LogOutputChannel,
    private readonly hooks: HookRegistry,
  ) {}

  get running(): CompactdClient | undefined {
    return this.client?.isRunning() ? this.api : undefined;
  }

  get status(): ServerStatus {
    return this._status;
  }

  /** True once the daemon was asked for and not stopped since: running, starting (the first
   * start, or again after a crash) or failed. A change of its launch settings restarts it then. */
  get inUse(): boolean {
    return this.client !== undefined || this.starting !== undefined || this._status.state === 'failed';
  }

  /** The client, starting the daemon on first use. */
  async ensureStarted(): Promise<CompactdClient> {
    const running = this.running;
    if (running) return running;
    const client = this.client;
    if (client !== undefined && this.starting === undefined) {
      // The language client is bringing a crashed daemon back: wait for it rather than start a second one.
      await settledStart(client);
      const back = this.running;
      if (back) return back;
    }
    this.starting ??= this.start().finally(() => (this.starting = undefined));
    return this.starting;
  }

  /** Stop the daemon and start it with the current settings. A start under way (made with the
   * settings before the change) is let finish first: stopping a client that is still starting
   * is refused by the language client and would leave its process to come up with old settings. */
  restart(): Promise<CompactdClient> {
    const next = this.restarting.then(async () => {
      await this.starting?.catch(() => undefined);
      const client = this.client;
      if (client !== undefined) await settledStart(client);
      await this.stop();
      return this.ensureStarted();
    });
    this.restarting = next.catch(() => undefined);
    return next;
  }

  async stop(): Promise<void> {
    const client = this.client;
    const proc = this.process;
    this.client = undefined;
    this.api = undefined;
    this.process = undefined;
    if (client === undefined) return;
    this.stopEmitter.fire();
    try {
      // stop() throws unless the client is running (e.g. a start that failed or is under way).
      if (client.state === State.Running) await client.stop(3000);
    } catch (error) {
      this.output.warn(`stopping the daemon: ${String(error)}`);
    } finally {
      if (proc !== undefined && proc.child.exitCode === null && proc.child.signalCode === null) proc.child.kill();
    }
    this.setStatus({ state: 'idle' });
  }

  /** Send the live settings (compactd.settings, compactd.summarizer, hooks) to the daemon. */
  async pushConfiguration(): Promise<void> {
    const client = this.client;
    if (!client?.isRunning()) return;
    const cfg = currentConfig();
    await client.sendNotification('workspace/didChangeConfiguration', didChangeConfigurationParams(cfg, this.hooks.active()));
  }

  private setStatus(status: ServerStatus): void {
    this._status = status;
    this.statusEmitter.fire(status);
  }

  private async start(): Promise<CompactdClient> {
    const cfg = currentConfig();
    this.warnAboutSecrets(cfg);
    const launch = serverLaunch(cfg);
    const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    this.output.info(`starting the daemon: ${launch.command} ${launch.args.join(' ')}`);
    this.setStatus({ state: 'starting' });
    let everRunning = false;
    const budget = new RestartBudget();
    // Spawned here, not by the client, to keep its stderr and exit status for the explanation.
    const serverOptions: ServerOptions = () => {
      const proc = spawnDaemon(launch, { cwd, clientPid: process.pid });
      this.process = proc;
      return Promise.resolve(proc.child);
    };
    const clientOptions: LanguageClientOptions = {
      // No documents: the daemon works on session files through its own methods.
      documentSelector: [],
      outputChannel: this.output,
      traceOutputChannel: this.output,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      initializationOptions: initializationOptions(cfg, this.hooks.active()),
      // No retry dialog and no raw error notification: ServerManager explains the failure.
      initializationFailedHandler: () => false,
      errorHandler: {
        error: () => ({ action: ErrorAction.Continue, handled: true }),
        closed: () => {
          if (this.client !== client || !everRunning) return { action: CloseAction.DoNotRestart, handled: true };
          if (budget.take()) {
            this.output.warn('the daemon stopped unexpectedly; restarting it');
            return { action: CloseAction.Restart, handled: true };
          }
          const proc = this.process;
          if (proc !== undefined) void this.explain(cfg, launch, proc, 'stopped');
          return { action: CloseAction.DoNotRestart, handled: true };
        },
      },
    };
    const client = new QuietLanguageClient('compactd', 'compactd', serverOptions, clientOptions);
    const api = new CompactdClient(endpointOf(client));
    // Hook requests go to whatever other extensions registered; registered before start so the
    // daemon's first request already finds the handler (LanguageClient keeps handlers across
    // its own restarts after a crash).
    for (const name of HOOK_NAMES) {
      client.onRequest(hookMethod(name), (params: Record<string, unknown>, token: CancellationToken) =>
        this.hooks.dispatch(name, params, token),
      );
    }
    this.client = client;
    this.api = api;
    // Every time a process is up — the first start and LanguageClient's automatic restarts after
    // a crash — listeners re-attach (session ids do not survive a new process).
    client.onDidChangeState((e) => {
      if (this.client !== client) return;
      if (e.newState === State.Running) {
        everRunning = true;
        this.setStatus({ state: 'running' });
        this.startEmitter.fire(api);
      } else if (e.newState === State.Starting) {
        this.setStatus({ state: 'starting' }); // also when the client restarts a crashed daemon
      } else if (e.newState === State.Stopped) {
        this.stopEmitter.fire();
      }
    });
    try {
      await client.start();
      // start() can resolve although the process died during initialize (see QuietLanguageClient).
      if (!client.isRunning()) throw new Error('the daemon exited during initialize');
    } catch (error) {
      const proc = this.process;
      if (this.client === client) {
        this.client = undefined;
        this.api = undefined;
        this.process = undefined;
      }
      this.output.error(`the daemon did not start: ${String(error)}`);
      const failure = proc !== undefined ? await this.explain(cfg, launch, proc, 'start') : undefined;
      throw new DaemonStartError(failure?.message ?? `compactd could not start: ${String(error)}`);
    }
    return api;
  }

  /** Wait (briefly) for the process's exit, then tell the user once what failed and what to change. */
  private async explain(cfg: ExtensionConfig, launch: ServerLaunch, proc: DaemonProcess, when: 'start' | 'stopped'): Promise<LaunchFailure> {
    if (proc.child.exitCode === null && proc.child.signalCode === null) proc.child.kill();
    const exit = await Promise.race([
      proc.exited,
      new Promise<{ code: null; signal: null }>((resolve) => setTimeout(() => resolve({ code: null, signal: null }), 3000)),
    ]);
    const failure = describeLaunchFailure(cfg, launch, exit, proc.stderr.value);
    const lead = when === 'start' ? 'compactd could not start' : 'The compactd server stopped and was not restarted';
    const message = `${lead}: ${failure.message}`;
    this.output.error(message);
    this.setStatus({ state: 'failed', message: failure.message, setting: failure.setting });
    const open = 'Open Setting';
    const logs = 'Show Output';
    void vscode.window.showErrorMessage(message, open, logs).then((choice) => {
      if (choice === open) void vscode.commands.executeCommand('workbench.action.openSettings', failure.setting);
      else if (choice === logs) this.output.show(true);
    });
    return failure;
  }

  /** Secret-looking keys in the settings are dropped before sending; tell the user once per change. */
  warnAboutSecrets(cfg: ExtensionConfig = currentConfig()): void {
    const keys = secretKeysIn(cfg);
    if (keys.length > 0) {
      void vscode.window.showWarningMessage(
        `compactd: ignoring ${keys.join(', ')}. Put the key in an environment variable and name it in compactd.summarizer.apiKeyEnv.`,
      );
    }
  }

  dispose(): void {
    void this.stop();
    this.startEmitter.dispose();
    this.stopEmitter.dispose();
    this.statusEmitter.dispose();
  }
}

/** Resolves once `client` is not starting any more (running, or stopped after a failed start),
 * at once if it is not starting; after `timeoutMs` in any case (stop() then kills the process). */
function settledStart(client: LanguageClient, timeoutMs = 15000): Promise<void> {
  if (client.state !== State.Starting) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      sub.dispose();
      resolve();
    };
    const timer = setTimeout(done, timeoutMs);
    const sub = client.onDidChangeState((e) => {
      if (e.newState !== State.Starting) done();
    });
  });
}

/** LanguageClient already has every method RpcEndpoint needs; this only narrows the type. */
function endpointOf(client: LanguageClient): RpcEndpoint {
  return {
    sendRequest: (method, params, token) => (token === undefined ? client.sendRequest(method, params) : client.sendRequest(method, params, token)),
    sendNotification: (method, params) => client.sendNotification(method, params),
    onNotification: (method, handler) => client.onNotification(method, handler),
    onRequest: (method, handler) => client.onRequest(method, handler),
    onProgress: (type, token, handler) => client.onProgress(type, token, handler),
  };
}
