// Where the repository, its test fixtures and the Python interpreter are.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/** The repository root: the nearest folder above this file that holds pyproject.toml. */
export function repoRoot(): string {
  let dir = __dirname;
  for (;;) {
    if (fs.existsSync(path.join(dir, 'pyproject.toml'))) return dir;
    const up = path.dirname(dir);
    if (up === dir) throw new Error(`no pyproject.toml above ${__dirname}`);
    dir = up;
  }
}

/** The real Pi session in the repository's own test fixtures (read it in place; copy only to a temp dir). */
export function piFixture(): string {
  return path.join(repoRoot(), 'tests', 'fixtures', 'pi-before-compaction.v1.jsonl');
}

/** CI installs the project into a venv and runs us there; locally set COMPACTD_PYTHON. */
export function pythonExecutable(): string {
  return process.env.COMPACTD_PYTHON || 'python';
}

const created: string[] = [];
process.on('exit', () => {
  for (const dir of created) fs.rmSync(dir, { recursive: true, force: true });
});

/** A fresh folder under the system temp dir, removed when the test process exits. */
export function tempDir(prefix = 'compactd-vscode-'): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  created.push(dir);
  return dir;
}

/** A private copy of the fixture in a fresh temp dir (for tests that write). */
export function fixtureCopy(): string {
  const dir = tempDir();
  const dest = path.join(dir, path.basename(piFixture()));
  fs.copyFileSync(piFixture(), dest);
  fs.chmodSync(dest, 0o644); // the checkout's copy may be read-only; a user's session file is not
  return dest;
}
