// Read-only markdown documents (summaries, dry runs, token statistics) served from memory and
// opened as a rendered Markdown preview.
// Documents from a TextDocumentContentProvider cannot be edited, which is what we want.
import * as vscode from 'vscode';

export const SCHEME = 'compactd';

export class MarkdownDocuments implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly contents = new Map<string, string>();
  private readonly changeEmitter = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changeEmitter.event;
  private readonly registration: vscode.Disposable;

  constructor() {
    this.registration = vscode.workspace.registerTextDocumentContentProvider(SCHEME, this);
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.contents.get(uri.toString()) ?? '_This document is no longer available._\n';
  }

  /** Show `markdown` under a stable name; showing the same name again replaces its text. */
  async show(name: string, markdown: string): Promise<void> {
    const safe = name.replace(/[^\w.-]+/g, '-');
    const uri = vscode.Uri.from({ scheme: SCHEME, path: `/${safe}.md` });
    const key = uri.toString();
    const existed = this.contents.has(key);
    this.contents.set(key, markdown);
    if (existed) this.changeEmitter.fire(uri);
    // Rendered, not as source: the built-in Markdown preview reads the document through this provider.
    await vscode.workspace.openTextDocument(uri);
    // Locked: a preview that follows the active editor would turn into some other file's preview.
    await vscode.commands.executeCommand('markdown.showPreview', uri, undefined, { locked: true });
  }

  dispose(): void {
    this.registration.dispose();
    this.changeEmitter.dispose();
    this.contents.clear();
  }
}
