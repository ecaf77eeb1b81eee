// Entry point: wires the daemon connection, the session state, the views and the commands.
import * as vscode from 'vscode';
import { registerCommands } from './commands';
import { HookRegistry } from './core/hooks';
import type { HookHandler } from './core/hooks';
import { OperationRegistry } from './core/operation';
import { errorMessage } from './core/protocolClient';
import { HOOK_NAMES, LIVE_KEYS, RESTART_KEYS } from './core/settings';
import type { HookName } from './core/settings';
import { SessionView } from './core/sessionView';
import { currentConfig, ServerManager } from './server';
import { MarkdownDocuments } from './views/documents';
import { bindRunningContext } from './views/progress';
import { SessionTreeProvider } from './views/sessionTree';
import { TokenStatusBar } from './views/statusBar';

/** What other extensions get from `vscode.extensions.getExtension('compactd.compactd-vscode').exports`. */
export interface CompactdApi {
  /** Hooks the daemon can ask about: beforeCompact, compacting, beforeTree. */
  readonly hookNames: readonly HookName[];
  /**
   * Answer one of the daemon's hook requests. The handler gets the event the daemon sends
   * (see protocol.md) and returns an answer object, or undefined/null for "no answer".
   * Several handlers run in registration order (a `cancel` answer stops the chain).
   */
  registerHookHandler(hook: HookName, handler: HookHandler): vscode.Disposable;
}

export function activate(context: vscode.ExtensionContext): CompactdApi {
  const output = vscode.window.createOutputChannel('compactd', { log: true });
  const hooks = new HookRegistry((hook, owner, error) =>
    output.warn(`hook handler for ${hook} (${owner}) failed: ${errorMessage(error)}; treated as no answer`),
  );
  const server = new ServerManager(output, hooks);
  // A hook gained its first handler or lost its last: tell the running daemon which to ask.
  const hookSub = hooks.onDidChangeActive(() => {
    server.pushConfiguration().catch((error: unknown) => output.warn(`declaring hooks: ${errorMessage(error)}`));
  });
  context.subscriptions.push({ dispose: () => hookSub.dispose() });
  const session = new SessionView();
  const ops = new OperationRegistry();
  const tree = new SessionTreeProvider(session, server);
  const docs = new MarkdownDocuments();
  const status = new TokenStatusBar(session, server, () => currentConfig().warnRatio);

  context.subscriptions.push(output, server, tree, docs, status, bindRunningContext(ops), { dispose: () => session.dispose() });

  // Each (re)start: re-attach the session state and listen for daemon-side compactions.
  let clientSubs: { dispose(): void }[] = [];
  const dropClientSubs = (): void => {
    for (const d of clientSubs) d.dispose();
    clientSubs = [];
  };
  context.subscriptions.push(
    server.onDidStart((client) => {
      dropClientSubs();
      clientSubs.push(
        client.onCompactionStart((p) => {
          if (p.sessionId === session.sessionId) status.setBusy(p.reason ?? 'running');
        }),
        client.onCompactionEnd((p) => {
          if (p.sessionId !== session.sessionId) return;
          status.setBusy(undefined);
          // Manual compactions report through their own request; tell the user about the others.
          if (p.reason !== 'manual' && p.errorMessage) void vscode.window.showWarningMessage(`compactd (${p.reason ?? 'auto'}): ${p.errorMessage}`);
        }),
      );
      session.attach(client).catch((error: unknown) => output.error(`reopening the session: ${errorMessage(error)}`));
    }),
    server.onDidStop(() => {
      dropClientSubs();
      session.detach();
      status.setBusy(undefined);
    }),
    { dispose: dropClientSubs },
  );
  const failSub = session.onDidFail((error) => output.warn(`refreshing the session tree: ${errorMessage(error)}`));
  context.subscriptions.push({ dispose: () => failSub.dispose() });

  context.subscriptions.push(...registerCommands({ server, session, tree, docs, ops, output }));

  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration(async (e) => {
      const affects = (keys: readonly string[]): boolean => keys.some((k) => e.affectsConfiguration(`compactd.${k}`));
      try {
        if (affects(RESTART_KEYS)) {
          // Also after a failed start (the user just changed what was wrong) and while the daemon
          // is starting or restarting after a crash (that start still has the old settings).
          if (server.inUse) await server.restart();
        } else if (affects(LIVE_KEYS)) {
          server.warnAboutSecrets();
          await server.pushConfiguration();
        }
        if (e.affectsConfiguration('compactd.statusBar')) status.render(session.snapshot);
      } catch (error) {
        output.error(`applying settings: ${errorMessage(error)}`);
      }
    }),
  );

  return {
    hookNames: HOOK_NAMES,
    registerHookHandler(hook: HookName, handler: HookHandler): vscode.Disposable {
      const reg = hooks.register(hook, handler, 'extension');
      return new vscode.Disposable(() => reg.dispose());
    },
  };
}

export function deactivate(): void {
  // Disposables registered on the context stop the daemon.
}
