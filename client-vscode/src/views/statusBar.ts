// Context usage in the status bar: `used / window (percent)`, amber near the threshold.
import * as vscode from 'vscode';
import { statusText, statusTooltip, usageLevel } from '../core/render';
import type { SessionSnapshot, SessionView } from '../core/sessionView';
import type { ServerManager } from '../server';

export class TokenStatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('compactd.tokens', vscode.StatusBarAlignment.Right, 100);
  private readonly subs: { dispose(): void }[];
  private busy: string | undefined;

  constructor(
    private readonly session: SessionView,
    private readonly server: ServerManager,
    private readonly warnRatio: () => number,
  ) {
    this.item.name = 'compactd context usage';
    this.subs = [session.onDidUpdate((snap) => this.render(snap)), server.onDidChangeStatus(() => this.render(this.session.snapshot))];
  }

  /** A daemon-side compaction is running (automatic or from another client). */
  setBusy(reason: string | undefined): void {
    this.busy = reason;
    this.render(this.session.snapshot);
  }

  render(snap: SessionSnapshot | undefined): void {
    const status = this.server.status;
    if (status.state === 'failed') {
      // Never stale figures: say the server is not running and offer the restart.
      this.item.text = '$(error) compactd: server not running';
      this.item.tooltip = `${status.message}\nClick to restart the server.`;
      this.item.command = 'compactd.restartServer';
      this.item.backgroundColor = new vscode.ThemeColor('statusBarItem.errorBackground');
      this.item.show();
      return;
    }
    this.item.command = 'compactd.showTokenStats';
    if (snap === undefined) {
      this.item.hide();
      return;
    }
    const spin = this.busy !== undefined ? '$(sync~spin) ' : '';
    if (snap.stats === undefined) {
      this.item.text = `${spin}$(dashboard) —`;
      this.item.tooltip = `Token statistics unavailable: ${snap.statsError ?? 'unknown error'}`;
      this.item.backgroundColor = undefined;
    } else {
      this.item.text = `${spin}$(dashboard) ${statusText(snap.stats)}`;
      this.item.tooltip = (this.busy !== undefined ? `Compacting (${this.busy})…\n` : '') + statusTooltip(snap.stats);
      const level = usageLevel(snap.stats, this.warnRatio());
      this.item.backgroundColor =
        level === 'over'
          ? new vscode.ThemeColor('statusBarItem.errorBackground')
          : level === 'warn'
            ? new vscode.ThemeColor('statusBarItem.warningBackground')
            : undefined;
    }
    this.item.show();
  }

  dispose(): void {
    for (const d of this.subs) d.dispose();
    this.item.dispose();
  }
}
