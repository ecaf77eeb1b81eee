// Starts, stops and restarts the daemon through vscode-languageclient (stdio, LSP framing).
// Each start makes a fresh LanguageClient; listeners re-attach through onDidStart.
import * as vscode from 'vscode';
import { LanguageClient, RevealOutputChannelOn, State, TransportKind } from 'vscode-languageclient/node';
import type { CancellationToken, LanguageClientOptions, ServerOptions } from 'vscode-languageclient/node';
import { CompactdClient } from './core/protocolClient';
import type { RpcEndpoint } from './core/protocolClient';
import { hookMethod } from './core/hooks';
import type { HookRegistry } from './core/hooks';
import { didChangeConfigurationParams, HOOK_NAMES, initializationOptions, readConfig, secretKeysIn, serverLaunch } from './core/settings';
import type { ExtensionConfig } from './core/settings';

export function currentConfig(): ExtensionConfig {
  const section = vscode.workspace.getConfiguration('compactd');
  return readConfig((key) => section.get(key));
}

export class ServerManager implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private api: CompactdClient | undefined;
  private readonly startEmitter = new vscode.EventEmitter<CompactdClient>();
  private readonly stopEmitter = new vscode.EventEmitter<void>();
  private starting: Promise<CompactdClient> | undefined;

  /** Fired each time a daemon process is up (also after an automatic restart), with the typed client. */
  readonly onDidStart = this.startEmitter.event;
  readonly onDidStop = this.stopEmitter.event;

  constructor(
    private readonly output: vscode.LogOutputChannel,
    private readonly hooks: HookRegistry,
  ) {}

  get running(): CompactdClient | undefined {
    return this.client?.isRunning() ? this.api : undefined;
  }

  /** The client, starting the daemon on first use. */
  async ensureStarted(): Promise<CompactdClient> {
    const running = this.running;
    if (running) return running;
    this.starting ??= this.start().finally(() => (this.starting = undefined));
    return this.starting;
  }

  async restart(): Promise<CompactdClient> {
    await this.stop();
    return this.ensureStarted();
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.api = undefined;
    if (client === undefined) return;
    this.stopEmitter.fire();
    try {
      await client.stop(3000);
    } catch (error) {
      this.output.warn(`stopping the daemon: ${String(error)}`);
    }
  }

  /** Send the live settings (compactd.settings, compactd.summarizer, hooks) to the daemon. */
  async pushConfiguration(): Promise<void> {
    const client = this.client;
    if (!client?.isRunning()) return;
    const cfg = currentConfig();
    await client.sendNotification('workspace/didChangeConfiguration', didChangeConfigurationParams(cfg, this.hooks.active()));
  }

  private async start(): Promise<CompactdClient> {
    const cfg = currentConfig();
    this.warnAboutSecrets(cfg);
    const launch = serverLaunch(cfg);
    this.output.info(`starting the daemon: ${launch.command} ${launch.args.join(' ')}`);
    const serverOptions: ServerOptions = {
      command: launch.command,
      args: launch.args,
      transport: TransportKind.stdio,
      options: { env: launch.env, cwd: vscode.workspace.workspaceFolders?.[0]?.uri.fsPath },
    };
    const clientOptions: LanguageClientOptions = {
      // No documents: the daemon works on session files through its own methods.
      documentSelector: [],
      outputChannel: this.output,
      traceOutputChannel: this.output,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      initializationOptions: initializationOptions(cfg, this.hooks.active()),
    };
    const client = new LanguageClient('compactd', 'compactd', serverOptions, clientOptions);
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
      if (e.newState === State.Running) this.startEmitter.fire(api);
      else if (e.newState === State.Stopped) this.stopEmitter.fire();
    });
    try {
      await client.start();
    } catch (error) {
      this.client = undefined;
      this.api = undefined;
      throw error;
    }
    return api;
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
  }
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
