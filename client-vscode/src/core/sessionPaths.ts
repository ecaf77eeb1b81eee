// Where Pi keeps session files (spec F-15): <agentDir>/sessions/--<encoded cwd>--/
// agentDir is ~/.pi/agent unless PI_CODING_AGENT_DIR says otherwise (a leading ~ is expanded).
import * as os from 'node:os';
import * as path from 'node:path';

export type Env = Readonly<Record<string, string | undefined>>;

export function expandHome(p: string, home: string = os.homedir()): string {
  if (p === '~') return home;
  if (p.startsWith('~/') || p.startsWith('~\\')) return path.join(home, p.slice(2));
  return p;
}

export function agentDir(env: Env = process.env, home: string = os.homedir()): string {
  const override = env.PI_CODING_AGENT_DIR;
  if (override !== undefined && override.trim() !== '') return expandHome(override.trim(), home);
  return path.join(home, '.pi', 'agent');
}

/** `/home/u/proj` -> `--home-u-proj--`; `C:\work\x` -> `--C--work-x--`. */
export function encodeCwd(cwd: string): string {
  const withoutLead = cwd.startsWith('/') || cwd.startsWith('\\') ? cwd.slice(1) : cwd;
  return `--${withoutLead.replace(/[/\\:]/g, '-')}--`;
}

export function sessionDirForCwd(cwd: string, env: Env = process.env, home: string = os.homedir()): string {
  return path.join(agentDir(env, home), 'sessions', encodeCwd(cwd));
}

/** Pi names files `<ISO timestamp with : and . replaced by ->_<sessionId>.jsonl` (F-16). */
export function parseSessionFileName(fileName: string): { timestamp: string; sessionId: string } | undefined {
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z)_(.+)\.jsonl$/.exec(path.basename(fileName));
  if (!m) return undefined;
  return { timestamp: m[1], sessionId: m[2] };
}
