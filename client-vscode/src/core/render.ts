// Text the extension shows: the status bar's token figures and the read-only markdown
// documents (token statistics, the compaction dry run, a summary entry). Pure functions of the
// daemon's results; unknown fields are still shown, so a newer daemon loses nothing.
import type { TokenStats } from './protocol';

export function formatTokens(n: number | null | undefined): string {
  if (typeof n !== 'number' || !Number.isFinite(n)) return '?';
  const abs = Math.abs(n);
  if (abs < 1000) return String(Math.round(n));
  if (abs < 1_000_000) {
    const k = n / 1000;
    return `${k >= 100 || Number.isInteger(k) ? Math.round(k) : k.toFixed(1)}k`;
  }
  const m = n / 1_000_000;
  return `${Number.isInteger(m) ? m : m.toFixed(2)}M`;
}

export function usagePercent(stats: Pick<TokenStats, 'contextTokens' | 'contextWindow'> & { percent?: number | null }): number {
  if (typeof stats.percent === 'number' && Number.isFinite(stats.percent)) return stats.percent;
  return stats.contextWindow > 0 ? (100 * stats.contextTokens) / stats.contextWindow : 0;
}

/** `45.2k / 200k (23%)` */
export function statusText(stats: TokenStats): string {
  return `${formatTokens(stats.contextTokens)} / ${formatTokens(stats.contextWindow)} (${Math.round(usagePercent(stats))}%)`;
}

export type UsageLevel = 'ok' | 'warn' | 'over';

/** `warn` from `warnRatio` of the compaction threshold on; `over` once the daemon says compact. */
export function usageLevel(stats: TokenStats, warnRatio: number): UsageLevel {
  if (stats.shouldCompact || (stats.threshold > 0 && stats.contextTokens > stats.threshold)) return 'over';
  if (stats.threshold > 0 && stats.contextTokens >= warnRatio * stats.threshold) return 'warn';
  return 'ok';
}

export function statusTooltip(stats: TokenStats): string {
  const lines = [
    `Context: ${fmtInt(stats.contextTokens)} of ${fmtInt(stats.contextWindow)} tokens (${usagePercent(stats).toFixed(1)}%)`,
    `Compaction threshold: ${fmtInt(stats.threshold)} (window − reserve ${fmtInt(stats.reserveTokens)})`,
  ];
  if (typeof stats.exactTokens === 'number') {
    const how = stats.exact === true ? "the model's own tokenizer" : "an approximation of the model's tokenizer";
    lines.push(`tiktoken count (${typeof stats.encoding === 'string' ? stats.encoding : '?'}, ${how}): ${fmtInt(stats.exactTokens)}`);
  }
  if (stats.shouldCompact) lines.push('Over the threshold: compaction is due.');
  lines.push('Click for full token statistics.');
  return lines.join('\n');
}

function fmtInt(n: unknown): string {
  return typeof n === 'number' && Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : plain(n);
}

/** Any JSON value as short text (objects as JSON, absent as a dash). */
function plain(v: unknown): string {
  if (v === null || v === undefined) return '—';
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return JSON.stringify(v);
}

function humanKey(key: string): string {
  const words = key.replace(/([a-z0-9])([A-Z])/g, '$1 $2').toLowerCase();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** A fence longer than any backtick run inside `text`. */
function fence(text: string, lang = ''): string {
  let ticks = '```';
  while (text.includes(ticks)) ticks += '`';
  return `${ticks}${lang}\n${text}\n${ticks}`;
}

function cell(v: unknown): string {
  let s: string;
  if (typeof v === 'number') s = fmtInt(v);
  else if (typeof v === 'string') s = v;
  else if (v === null || v === undefined) s = '—';
  else s = JSON.stringify(v);
  return s.replace(/\|/g, '\\|').replace(/\r?\n/g, ' ');
}

function isScalar(v: unknown): boolean {
  return v === null || ['string', 'number', 'boolean'].includes(typeof v);
}

/** Scalars as a two-column table, short lists as bullets, long text fenced, objects nested. */
export function objectToMarkdown(obj: Record<string, unknown>, level = 2, skip: readonly string[] = []): string {
  const out: string[] = [];
  const scalars = Object.entries(obj).filter(
    ([k, v]) => !skip.includes(k) && isScalar(v) && !(typeof v === 'string' && (v.includes('\n') || v.length > 160)),
  );
  if (scalars.length > 0) {
    out.push('| | |', '|---|---|');
    for (const [k, v] of scalars) out.push(`| ${humanKey(k)} | ${cell(v)} |`);
    out.push('');
  }
  for (const [k, v] of Object.entries(obj)) {
    if (skip.includes(k) || scalars.some(([sk]) => sk === k) || v === undefined) continue;
    const heading = `${'#'.repeat(Math.min(6, level))} ${humanKey(k)}`;
    if (typeof v === 'string') {
      out.push(heading, '', fence(v), '');
    } else if (Array.isArray(v)) {
      out.push(heading, '');
      if (v.length === 0) out.push('(none)');
      else if (v.every(isScalar)) for (const item of v) out.push(`- ${cell(item)}`);
      else out.push(fence(JSON.stringify(v, null, 2), 'json'));
      out.push('');
    } else if (typeof v === 'object' && v !== null) {
      out.push(heading, '', objectToMarkdown(v as Record<string, unknown>, level + 1), '');
    }
  }
  return out.join('\n').trimEnd() + '\n';
}

/** What the tiktoken count is, in words: which encoding, and whether it is the model's own
 * tokenizer (`exact`) or an approximation of it. */
export function exactCountSentence(stats: TokenStats): string | undefined {
  if (typeof stats.exactTokens !== 'number') return undefined;
  const encoding = typeof stats.encoding === 'string' ? stats.encoding : 'an unknown encoding';
  const count = `**${fmtInt(stats.exactTokens)}** tokens counted with tiktoken's \`${encoding}\` encoding`;
  return stats.exact === true
    ? `${count}. That is the model's own tokenizer, so this is the number of tokens the model sees.`
    : `${count}. That is not the model's own tokenizer (tiktoken has no encoding for it), so this is an ` +
        'approximation: the model may count somewhat more or fewer tokens.';
}

export function tokenStatsMarkdown(stats: TokenStats, title = 'Token statistics'): string {
  const head = [
    `# ${title}`,
    '',
    `**${statusText(stats)}** — threshold ${fmtInt(stats.threshold)}, reserve ${fmtInt(stats.reserveTokens)}` +
      (stats.shouldCompact ? ' — **compaction is due**' : ''),
    '',
    `Context size (Pi's figure, used for automatic compaction): **${fmtInt(stats.contextTokens)}** tokens, ` +
      (stats.usageStale === true
        ? 'a characters ÷ 4 estimate of the context (no answer since the last compaction reported its usage).'
        : "the last answer's reported usage plus a characters ÷ 4 estimate of what came after it."),
    '',
  ];
  const exact = exactCountSentence(stats);
  if (exact !== undefined) head.push(`Exact count: ${exact}`, '');
  // `exact` and `encoding` are said in words above; the raw boolean beside a count misleads.
  return head.join('\n') + '\n' + objectToMarkdown(stats, 2, exact !== undefined ? ['exact', 'encoding'] : []);
}

/** Below this many tokens of messages to summarize, a summary (Pi's structured format: goal,
 * progress, decisions, next steps, files) is usually no shorter than what it replaces. */
export const TYPICAL_SUMMARY_TOKENS = 1000;

const PREPARE_KEYS = [
  'estimatedTokensBefore',
  'estimatedTokensSummarized',
  'tokensBefore',
  'estimatedTokensAfter',
  'estimatedTokensKept',
  'compat',
  'firstKeptEntryId',
  'isSplitTurn',
  'turnStartEntryId',
  'messagesToSummarize',
  'turnPrefixMessages',
  'readFiles',
  'modifiedFiles',
  'previousSummary',
  'conversationText',
  'turnPrefixText',
];

function messageCounts(v: unknown): string {
  if (!Array.isArray(v) || v.length === 0) return 'none';
  const byRole = new Map<string, number>();
  for (const m of v) {
    const role = typeof m === 'object' && m !== null ? plain((m as { role?: unknown }).role) : '?';
    byRole.set(role, (byRole.get(role) ?? 0) + 1);
  }
  const first = plain((v[0] as { entryId?: unknown }).entryId);
  const last = plain((v[v.length - 1] as { entryId?: unknown }).entryId);
  const roles = [...byRole].map(([r, n]) => `${n} ${r}`).join(', ');
  return `${v.length} (${roles}); entries \`${first}\` … \`${last}\``;
}

function fileList(v: unknown): string[] {
  if (!Array.isArray(v) || v.length === 0) return ['(none)'];
  return v.map((f) => `- \`${plain(f)}\``);
}

/** The dry run of `session/prepareCompaction`, readable: the figures first, then what is
 * summarized and kept, the file lists, and the exact conversation text the summarizer would get.
 * `null` (the daemon's answer when there is nothing to compact) gets a short explanation. */
export function prepareCompactionMarkdown(result: Record<string, unknown> | null, sessionLabel = ''): string {
  const out = [`# What compaction would do${sessionLabel ? ` — ${sessionLabel}` : ''}`, ''];
  if (result === null) {
    out.push(
      '**Nothing would be compacted.** The path to the leaf has no older messages to summarize ' +
        '(the session is short, or everything before the kept region is already summarized).',
      '',
    );
    return out.join('\n');
  }
  // Like with like: the kept figure of the same basis as the context now (under oh-my-pi's rules
  // estimatedTokensAfter is its own estimate; estimatedTokensKept is characters ÷ 4).
  const after = typeof result.estimatedTokensKept === 'number' ? result.estimatedTokensKept : result.estimatedTokensAfter;
  const estBefore = result.estimatedTokensBefore;
  const summarized = result.estimatedTokensSummarized;
  if (typeof estBefore === 'number' && typeof after === 'number') {
    // Both figures are characters ÷ 4 estimates (Pi's tokensBefore is the provider's usage), the
    // basis of the compaction's own figures in the session tree.
    const saved = estBefore > 0 ? Math.round((100 * (estBefore - after)) / estBefore) : 0;
    out.push(`Context now, estimated: about **${fmtInt(estBefore)}** tokens; kept after compaction: about **${fmtInt(after)}** ` +
      `tokens (−${saved}%) **plus the summary** the model writes. Both are characters ÷ 4 estimates of what the model gets ` +
      '(system prompt and earlier summaries included), as the session tree shows a compaction\'s figures.', '');
    if (typeof summarized === 'number') {
      out.push(`The summary replaces about **${fmtInt(summarized)}** tokens of messages; the context shrinks only if the summary is shorter than that.`, '');
      if (summarized < TYPICAL_SUMMARY_TOKENS) {
        out.push(`> **Warning: this compaction would probably not shrink the context.** The messages to summarize are about ${fmtInt(summarized)} ` +
          `tokens, less than a structured summary usually takes (about ${fmtInt(TYPICAL_SUMMARY_TOKENS)}).`, '');
      }
    }
    if (typeof result.tokensBefore === 'number') out.push(`Pi's own figure for the context now (provider usage plus estimate): ${fmtInt(result.tokensBefore)} tokens.`, '');
    if (result.compat === 'omp') out.push('Prepared by oh-my-pi 18\'s rules (the file is oh-my-pi\'s).', '');
    if (result.compat === 'omp' && typeof result.estimatedTokensAfter === 'number' && result.estimatedTokensAfter !== after) {
      out.push(`oh-my-pi's own estimate of what is kept (its tokenizer): ${fmtInt(result.estimatedTokensAfter)} tokens.`, '');
    }
  } else if (typeof result.tokensBefore === 'number' && typeof after === 'number') {
    out.push(`Context now: **${fmtInt(result.tokensBefore)}** tokens (Pi's figure); kept after compaction: about **${fmtInt(after)}** tokens (estimate), before the summary itself is added.`, '');
  }
  out.push('| | |', '|---|---|');
  out.push(`| Messages to summarize | ${cell(messageCounts(result.messagesToSummarize))} |`);
  out.push(`| First kept entry | \`${plain(result.firstKeptEntryId)}\` |`);
  if (result.isSplitTurn === true) {
    out.push(`| Split turn | yes: the turn starting at \`${plain(result.turnStartEntryId)}\` is cut; its prefix (${cell(messageCounts(result.turnPrefixMessages))}) gets a summary of its own |`);
  } else {
    out.push('| Split turn | no |');
  }
  out.push('');
  out.push('## Files read', '', ...fileList(result.readFiles), '');
  out.push('## Files modified', '', ...fileList(result.modifiedFiles), '');
  if (typeof result.previousSummary === 'string' && result.previousSummary !== '') {
    out.push('## Previous summary (to be updated)', '', fence(result.previousSummary, 'markdown'), '');
  }
  if (typeof result.conversationText === 'string') {
    out.push('## Conversation text sent to the summarizer', '', fence(result.conversationText), '');
  }
  if (typeof result.turnPrefixText === 'string' && result.turnPrefixText !== '') {
    out.push('## Turn prefix text', '', fence(result.turnPrefixText), '');
  }
  const rest: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(result)) if (!PREPARE_KEYS.includes(k)) rest[k] = v;
  if (Object.keys(rest).length > 0) out.push('## Other fields', '', objectToMarkdown(rest, 3));
  return out.join('\n').trimEnd() + '\n';
}

function text(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

/** A timestamp (ISO text or epoch milliseconds) as a readable UTC date, e.g. "2026-11-30 10:18:24 UTC". */
export function formatDate(v: unknown): string | undefined {
  const d = typeof v === 'number' ? new Date(v) : typeof v === 'string' ? new Date(/^\d+$/.test(v) ? Number(v) : v) : undefined;
  if (d === undefined || Number.isNaN(d.getTime())) return undefined;
  return `${d.toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

const ROLE_TITLES: Record<string, string> = {
  user: 'User message',
  assistant: 'Assistant answer',
  toolResult: 'Tool result',
  bashExecution: 'Shell command',
  custom: 'Extension message',
  developer: 'Developer message',
  system: 'System prompt state',
};

const TYPE_TITLES: Record<string, string> = {
  compaction: 'Compaction summary',
  branch_summary: 'Branch summary',
  custom_message: 'Extension message',
  custom: 'Extension data',
  label: 'Label',
  model_change: 'Model change',
  thinking_level_change: 'Thinking level change',
  session_info: 'Session name',
  context_edit: 'Context edit',
  usage: 'Usage record',
  model_usage: 'Model usage record',
  title_change: 'Title change',
};

/** Content blocks (or a string) as Markdown: text as it is, thinking quoted, tool calls with their
 * arguments, images named. */
function contentMarkdown(content: unknown): string[] {
  if (typeof content === 'string') return [content.trimEnd(), ''];
  if (!Array.isArray(content)) return [];
  const out: string[] = [];
  for (const block of content) {
    if (typeof block !== 'object' || block === null) continue;
    const b = block as Record<string, unknown>;
    if (b.type === 'text') out.push(text(b.text).trimEnd(), '');
    else if (b.type === 'thinking') {
      const t = text(b.thinking).trim();
      out.push(t !== '' ? t.split('\n').map((l) => `> ${l}`).join('\n') : '> _(thinking, text not kept)_', '');
    } else if (b.type === 'toolCall') {
      out.push(`**Tool call \`${plain(b.name)}\`**`, '', fence(JSON.stringify(b.arguments ?? {}, null, 2), 'json'), '');
    } else if (b.type === 'image') out.push(`_(image, ${plain(b.mimeType)})_`, '');
    else out.push(fence(JSON.stringify(b, null, 2), 'json'), '');
  }
  return out;
}

const SHOWN_ENTRY_KEYS = ['id', 'parentId', 'type', 'timestamp', 'summary', 'tokensBefore', 'tokensAfter', 'firstKeptEntryId', 'fromId', 'fromHook', 'fromExtension', 'message', 'method', 'warning', 'content'];
const SHOWN_MESSAGE_KEYS = ['role', 'content', 'timestamp', 'toolName', 'toolCallId', 'isError', 'command', 'output', 'exitCode', 'usage', 'model', 'provider', 'stopReason', 'errorMessage', 'api'];

/** Any entry as a document for people: what it is and when (as a date), its text, tool calls and
 * results readable, the remaining fields as one table of details. */
export function entryMarkdown(entry: Record<string, unknown>): string {
  const type = text(entry.type);
  const message = typeof entry.message === 'object' && entry.message !== null ? (entry.message as Record<string, unknown>) : undefined;
  const role = message !== undefined ? text(message.role) : '';
  const title = message !== undefined ? ROLE_TITLES[role] ?? `${role || 'Unknown'} message` : TYPE_TITLES[type] ?? `${type || 'Unknown'} entry`;
  const out = [`# ${title}`, ''];
  const facts: string[] = [];
  const fact = (name: string, v: unknown): void => {
    if (v !== undefined && v !== null && v !== '') facts.push(`- ${name}: ${typeof v === 'number' ? fmtInt(v) : plain(v)}`);
  };
  fact('Written', formatDate(entry.timestamp) ?? entry.timestamp);
  fact('Entry', entry.id === undefined ? undefined : `\`${plain(entry.id)}\``);
  if (message !== undefined) {
    if (role === 'toolResult') fact('Tool', message.toolName === undefined ? undefined : `\`${plain(message.toolName)}\`${message.isError === true ? ' (failed)' : ''}`);
    if (role === 'assistant') {
      fact('Model', [message.provider, message.model].filter((x) => typeof x === 'string').join('/'));
      fact('Stopped', message.stopReason);
      fact('Error', message.errorMessage);
      const usage = message.usage as Record<string, unknown> | undefined;
      if (usage !== undefined && typeof usage === 'object') fact('Tokens (usage)', `${fmtInt(usage.input)} in, ${fmtInt(usage.output)} out`);
    }
  }
  if (type === 'compaction') {
    fact('Tokens before (recorded)', entry.tokensBefore);
    fact('Tokens after (recorded)', entry.tokensAfter);
    fact('Method', entry.method);
    fact('First kept entry', entry.firstKeptEntryId === undefined ? undefined : `\`${plain(entry.firstKeptEntryId)}\``);
  }
  if (type === 'branch_summary') fact('Summarized branch ended at', entry.fromId === undefined ? undefined : `\`${plain(entry.fromId)}\``);
  if (entry.fromHook === true || entry.fromExtension === true) facts.push('- Written by an extension hook');
  if (facts.length > 0) out.push(...facts, '');
  if (typeof entry.warning === 'string' && entry.warning !== '') out.push(`> **Warning recorded:** ${entry.warning}`, '');
  const summary = text(entry.summary);
  if (summary !== '') {
    // The summary is markdown written for a model; show it as it is.
    out.push('---', '', summary.trimEnd(), '', '---', '');
  } else if (type === 'compaction' || type === 'branch_summary') {
    out.push('_(empty summary)_', '');
  }
  if (message !== undefined) {
    if (role === 'bashExecution') {
      out.push(fence(`$ ${text(message.command)}\n${text(message.output)}`, 'console'), '');
      if (typeof message.exitCode === 'number') out.push(`Exit code ${message.exitCode}.`, '');
    } else {
      out.push(...contentMarkdown(message.content));
    }
  } else if (entry.content !== undefined) {
    out.push(...contentMarkdown(entry.content));
  }
  const rest: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(entry)) if (!SHOWN_ENTRY_KEYS.includes(k)) rest[k] = v;
  if (message !== undefined) for (const [k, v] of Object.entries(message)) if (!SHOWN_MESSAGE_KEYS.includes(k)) rest[k] = v;
  // Pi's `details` of summaries: the file lists, each under its own heading.
  const details = typeof rest.details === 'object' && rest.details !== null ? { ...(rest.details as Record<string, unknown>) } : undefined;
  if (details !== undefined) {
    for (const [key, heading] of [['readFiles', 'Files read'], ['modifiedFiles', 'Files modified']] as const) {
      if (!Array.isArray(details[key])) continue;
      out.push(`## ${heading}`, '', ...fileList(details[key]), '');
      delete details[key];
    }
    if (Object.keys(details).length > 0) rest.details = details;
    else delete rest.details;
  }
  if (Object.keys(rest).length > 0) out.push('## Other fields', '', objectToMarkdown(rest, 3));
  return out.join('\n').trimEnd() + '\n';
}
