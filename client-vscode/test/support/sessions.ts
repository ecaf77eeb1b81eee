// Pi v3 session files written by the tests: a long linear run and a branching one.
import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';

interface Line {
  [key: string]: unknown;
}

const T0 = Date.parse('2025-06-01T10:00:00.000Z');

function header(cwd: string, n: number): Line {
  return { type: 'session', version: 3, id: randomUUID(), timestamp: new Date(T0 - 1000 + n).toISOString(), cwd };
}

function message(id: string, parentId: string | null, i: number, role: 'user' | 'assistant', text: string): Line {
  const ts = T0 + i * 1000;
  const msg: Line =
    role === 'user'
      ? { role, content: text, timestamp: ts }
      : {
          role,
          content: [{ type: 'text', text }],
          api: 'openai-completions',
          provider: 'openai',
          model: 'gpt-4o-mini',
          usage: { input: 100 + i, output: 20, cacheRead: 0, cacheWrite: 0, totalTokens: 120 + i, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
          stopReason: 'stop',
          timestamp: ts,
        };
  return { type: 'message', id, parentId, timestamp: new Date(ts).toISOString(), message: msg };
}

function write(file: string, lines: Line[]): string {
  fs.writeFileSync(file, lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
  return file;
}

/** `count` entries, alternating user/assistant, each the child of the one before. */
export function writeLinearSession(dir: string, count: number): string {
  const lines: Line[] = [header(dir, 0)];
  for (let i = 0; i < count; i++) {
    const role = i % 2 === 0 ? 'user' : 'assistant';
    lines.push(message(`m${i}`, i === 0 ? null : `m${i - 1}`, i, role, `${role} message number ${i} about the build`));
  }
  return write(path.join(dir, 'linear.jsonl'), lines);
}

/**
 *   a0 - a1 - a2 - a3 -+- b0 - b1                (first branch)
 *                      +- c0 - c1 -+- d0 - d1    (second branch, itself branching)
 *                                  +- e0 - e1    (leaf e1: written last)
 */
export function writeBranchingSession(dir: string): { file: string; leafId: string } {
  const lines: Line[] = [header(dir, 1)];
  let i = 0;
  const add = (id: string, parentId: string | null): void => {
    const role = i % 2 === 0 ? 'user' : 'assistant';
    lines.push(message(id, parentId, i++, role, `${role} ${id}`));
  };
  add('a0', null);
  add('a1', 'a0');
  add('a2', 'a1');
  add('a3', 'a2');
  add('b0', 'a3');
  add('b1', 'b0');
  add('c0', 'a3');
  add('c1', 'c0');
  add('d0', 'c1');
  add('d1', 'd0');
  add('e0', 'c1');
  add('e1', 'e0');
  return { file: write(path.join(dir, 'branching.jsonl'), lines), leafId: 'e1' };
}

/** A path of `stretches` runs of `length` entries; each run but the last ends at a branch point
 * that also has a one-entry side branch (written first, so the path is the second child). */
export function writeStretchedSession(dir: string, stretches: number, length: number): { file: string; leafId: string } {
  const lines: Line[] = [header(dir, 2)];
  let i = 0;
  let parent: string | null = null;
  for (let s = 0; s < stretches; s++) {
    for (let k = 0; k < length; k++) {
      const id = `p${s}-${k}`;
      lines.push(message(id, parent, i++, i % 2 === 1 ? 'user' : 'assistant', `stretch ${s} entry ${k}`));
      parent = id;
    }
    if (s < stretches - 1) lines.push(message(`side${s}`, parent, i++, 'user', `side branch ${s}`));
  }
  return { file: write(path.join(dir, 'stretched.jsonl'), lines), leafId: parent! };
}
