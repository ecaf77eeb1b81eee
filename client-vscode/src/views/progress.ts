// A long request shown as a cancellable progress notification. The notification's Cancel button
// and the Escape keybinding (compactd.cancelOperation) both end in Operation.cancel(), which
// cancels the token handed to sendRequest, i.e. sends $/cancelRequest.
import * as vscode from 'vscode';
import type { OperationRegistry, OperationResult } from '../core/operation';
import type { CancellationToken } from 'vscode-jsonrpc';
import type { WorkDoneProgressValue } from '../core/protocolClient';

export type LongRequest<T> = (token: CancellationToken, onProgress: (v: WorkDoneProgressValue) => void) => Promise<T>;

export function runWithProgress<T>(ops: OperationRegistry, title: string, request: LongRequest<T>): Promise<OperationResult<T>> {
  const op = ops.create(title);
  return Promise.resolve(
    vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title, cancellable: true },
      async (progress, uiToken) => {
        const cancelSub = uiToken.onCancellationRequested(() => op.cancel());
        const changeSub = op.onDidChange(() => progress.report({ message: op.displayMessage(), increment: op.takeIncrement() }));
        try {
          return await op.run(request);
        } finally {
          cancelSub.dispose();
          changeSub.dispose();
        }
      },
    ),
  );
}

/** Keeps the `compactd.operationRunning` context key (the Escape keybinding's `when`) in step. */
export function bindRunningContext(ops: OperationRegistry): vscode.Disposable {
  void vscode.commands.executeCommand('setContext', 'compactd.operationRunning', false);
  const sub = ops.onDidChangeRunning((running) => {
    void vscode.commands.executeCommand('setContext', 'compactd.operationRunning', running);
  });
  return new vscode.Disposable(() => sub.dispose());
}
