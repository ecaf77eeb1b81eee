// Context usage in the status bar: `used / window (percent)`, amber near the threshold.
import * as vscode from 'vscode';
import { statusText, statusTooltip, usageLevel } from '../core/render';
import type { SessionSnapshot, SessionView } from '../core/sessionView';

export class TokenStatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('compactd.tokens', vscode.StatusBarAlignment.Right, 100);
  private readonly sub: { dispose(): void };
  private busy: string | undefined;

  constructor(
    private readonly session: SessionView,
    private readonly warnRatio: () => number,
  ) {
    this.item.name = 'compactd context usage';
    this.item.command = 'compactd.showTokenStats';
    this.sub = session.onDidUpdate((snap) => this.render(snap));
  }

  /** A daemon-side compaction is running (automatic or from another client). */
  setBusy(reason: string | undefined): void {
    this.busy = reason;
    this.render(this.session.snapshot);
  }

  render(snap: SessionSnapshot | undefined): void {
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
    this.sub.dispose();
    this.item.dispose();
  }
}
