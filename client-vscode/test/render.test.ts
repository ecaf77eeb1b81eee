import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  formatTokens,
  objectToMarkdown,
  prepareCompactionMarkdown,
  statusText,
  statusTooltip,
  entryMarkdown,
  tokenStatsMarkdown,
  usageLevel,
} from '../src/core/render';
import type { TokenStats } from '../src/core/protocol';

const stats = (contextTokens: number, extra: Partial<TokenStats> = {}): TokenStats => ({
  contextTokens,
  contextWindow: 200_000,
  reserveTokens: 16_384,
  threshold: 183_616,
  shouldCompact: false,
  exactTokens: contextTokens + 5,
  ...extra,
});

describe('render: status bar', () => {
  it('formats token counts compactly', () => {
    assert.equal(formatTokens(999), '999');
    assert.equal(formatTokens(45_210), '45.2k');
    assert.equal(formatTokens(200_000), '200k');
    assert.equal(formatTokens(128_000), '128k');
    assert.equal(formatTokens(1_047_576), '1.05M');
    assert.equal(formatTokens(undefined), '?');
  });

  it('shows used / window and percent', () => {
    assert.equal(statusText(stats(45_210)), '45.2k / 200k (23%)');
    assert.equal(statusText(stats(10, { contextWindow: 0 })), '10 / 0 (0%)');
  });

  it('turns amber near the threshold and red once compaction is due', () => {
    assert.equal(usageLevel(stats(100_000), 0.9), 'ok');
    assert.equal(usageLevel(stats(170_000), 0.9), 'warn');
    assert.equal(usageLevel(stats(183_617), 0.9), 'over');
    assert.equal(usageLevel(stats(10, { shouldCompact: true }), 0.9), 'over');
    assert.equal(usageLevel(stats(100_000), 0.5), 'warn');
  });

  it('puts the figures in the tooltip', () => {
    const t = statusTooltip(stats(45_210, { shouldCompact: true }));
    assert.match(t, /45,210 of 200,000 tokens/);
    assert.match(t, /threshold: 183,616/);
    assert.match(t, /tiktoken count \(\?, an approximation of the model's tokenizer\): 45,215/);
    assert.match(statusTooltip(stats(1, { encoding: 'o200k_base', exact: true })), /tiktoken count \(o200k_base, the model's own tokenizer\): 6/);
    assert.match(t, /compaction is due/);
  });
});

describe('render: documents', () => {
  it('token statistics list every field and say in words what the exact count is', () => {
    const md = tokenStatsMarkdown(stats(1000, { encoding: 'o200k_base', exact: false, breakdown: { user: 10 } }));
    assert.match(md, /^# Token statistics/);
    assert.match(md, /\| Context tokens \| 1,000 \|/);
    assert.match(md, /Exact count: \*\*1,005\*\* tokens counted with tiktoken's `o200k_base` encoding\. That is not the model's own tokenizer/);
    // Said in words, so not repeated as a bare `Exact | false` beside the count.
    assert.doesNotMatch(md, /\| Exact \|/);
    assert.doesNotMatch(md, /\| Encoding \|/);
    assert.match(md, /reserve 16,384\n\n/);
    const own = tokenStatsMarkdown(stats(1000, { encoding: 'cl100k_base', exact: true }));
    assert.match(own, /`cl100k_base` encoding\. That is the model's own tokenizer, so this is the number of tokens the model sees\./);
    const stale = tokenStatsMarkdown(stats(1000, { usageStale: true }));
    assert.match(stale, /a characters ÷ 4 estimate of the context/);
    assert.match(md, /## Breakdown\n\n\| \| \|\n\|---\|---\|\n\| User \| 10 \|/);
  });

  it('the dry run explains nothing-to-do and renders a preparation readably', () => {
    assert.match(prepareCompactionMarkdown(null), /Nothing would be compacted/);
    const md = prepareCompactionMarkdown({
      firstKeptEntryId: 'k1',
      isSplitTurn: true,
      turnStartEntryId: 't1',
      tokensBefore: 50_000,
      messagesToSummarize: [
        { role: 'user', entryId: 'a' },
        { role: 'assistant', entryId: 'b' },
        { role: 'user', entryId: 'c' },
      ],
      turnPrefixMessages: [{ role: 'user', entryId: 't1' }],
      previousSummary: null,
      readFiles: ['src/a.ts'],
      modifiedFiles: [],
      conversationText: '[User]: hi ```code```',
      turnPrefixText: '[User]: prefix',
      estimatedTokensAfter: 12_500,
      estimatedTokensBefore: 40_000,
      estimatedTokensSummarized: 27_500,
      estimatedTokensKept: 12_500,
      compat: 'pi',
      somethingNew: 7,
    });
    // Like with like: estimate now against estimate after; Pi's usage-based figure said apart.
    assert.match(md, /Context now, estimated: about \*\*40,000\*\* tokens; kept after compaction: about \*\*12,500\*\* tokens \(−69%\) \*\*plus the summary\*\*/);
    assert.match(md, /replaces about \*\*27,500\*\* tokens of messages/);
    assert.match(md, /Pi's own figure for the context now \(provider usage plus estimate\): 50,000 tokens/);
    assert.doesNotMatch(md, /would probably not shrink/);
    assert.doesNotMatch(md, /Estimated tokens before/);
    assert.doesNotMatch(md, /Estimated tokens kept|\| Compat \|/);
    assert.match(md, /Both are characters ÷ 4 estimates of what the model gets \(system prompt and earlier summaries included\)/);
    // oh-my-pi: the kept figure compared is the characters ÷ 4 one; its own estimate is said apart.
    const omp = prepareCompactionMarkdown({ tokensBefore: 9020, estimatedTokensBefore: 3000, estimatedTokensAfter: 900,
      estimatedTokensKept: 1000, estimatedTokensSummarized: 2000, compat: 'omp', messagesToSummarize: [], firstKeptEntryId: 'k' });
    assert.match(omp, /about \*\*3,000\*\* tokens; kept after compaction: about \*\*1,000\*\* tokens \(−67%\)/);
    assert.match(omp, /Prepared by oh-my-pi 18's rules/);
    assert.match(omp, /oh-my-pi's own estimate of what is kept \(its tokenizer\): 900 tokens/);
    // Too little to summarize: the dry run warns before anything is written.
    const small = prepareCompactionMarkdown({ tokensBefore: 949, estimatedTokensBefore: 1000, estimatedTokensAfter: 147,
      estimatedTokensSummarized: 853, messagesToSummarize: [], firstKeptEntryId: 'k' });
    assert.match(small, /\*\*Warning: this compaction would probably not shrink the context\.\*\* The messages to summarize are about 853 tokens/);
    assert.match(md, /3 \(2 user, 1 assistant\); entries `a` … `c`/);
    assert.match(md, /Split turn \| yes: the turn starting at `t1`/);
    assert.match(md, /## Files read\n\n- `src\/a.ts`/);
    assert.match(md, /## Files modified\n\n\(none\)/);
    // The fence must be longer than the backtick run inside the conversation text.
    assert.match(md, /````\n\[User\]: hi ```code```\n````/);
    assert.match(md, /## Turn prefix text/);
    assert.match(md, /\| Something new \| 7 \|/);
    assert.doesNotMatch(md, /Previous summary/);
  });

  it('a compaction entry opens as its summary with the facts above it, one heading per part', () => {
    const md = entryMarkdown({
      type: 'compaction',
      id: 'c1',
      parentId: 'p',
      timestamp: '2025-01-01T00:00:00.000Z',
      summary: '## Goal\nShip it.\n',
      firstKeptEntryId: 'k9',
      tokensBefore: 120_000,
      details: { readFiles: ['a.ts'], modifiedFiles: ['b.ts'] },
    });
    assert.match(md, /^# Compaction summary/);
    assert.match(md, /- Written: 2025-01-01 00:00:00 UTC/);
    assert.match(md, /- Tokens before \(recorded\): 120,000/);
    assert.match(md, /- First kept entry: `k9`/);
    assert.match(md, /---\n\n## Goal\nShip it.\n\n---/);
    assert.match(md, /## Files read\n\n- `a.ts`/);
    assert.match(md, /## Files modified\n\n- `b.ts`/);
    assert.doesNotMatch(md, /Details/);
  });

  it('an oh-my-pi compaction shows its recorded figures, method and warning', () => {
    const md = entryMarkdown({ type: 'compaction', id: 'c', summary: 'Done.', tokensBefore: 4477, tokensAfter: 14722,
      method: 'handoff', warning: 'Compaction freed too little context', fromExtension: false, firstKeptEntryId: 'k' });
    assert.match(md, /- Tokens after \(recorded\): 14,722/);
    assert.match(md, /- Method: handoff/);
    assert.match(md, /> \*\*Warning recorded:\*\* Compaction freed too little context/);
    assert.doesNotMatch(md, /Other fields/);
  });

  it('a branch summary names the branch it came from', () => {
    const md = entryMarkdown({ type: 'branch_summary', id: 'b1', fromId: 'old', summary: 'S', fromHook: true });
    assert.match(md, /^# Branch summary/);
    assert.match(md, /Summarized branch ended at: `old`/);
    assert.match(md, /Written by an extension hook/);
  });

  it('messages read as text: dates as dates, tool calls and results readable, no JSON of the message', () => {
    const answer = entryMarkdown({ type: 'message', id: 'a1', timestamp: '2026-11-30T10:18:24.772Z', message: {
      role: 'assistant', provider: 'openai', model: 'gpt-5', stopReason: 'toolUse', timestamp: 1796034171225,
      usage: { input: 613, output: 20 },
      content: [{ type: 'thinking', thinking: 'look at app.py' }, { type: 'text', text: 'Reading it.' },
        { type: 'toolCall', id: 'c1', name: 'read', arguments: { path: 'app.py' } }] } });
    assert.match(answer, /^# Assistant answer/);
    assert.match(answer, /- Written: 2026-11-30 10:18:24 UTC/);
    assert.match(answer, /- Model: openai\/gpt-5/);
    assert.match(answer, /- Tokens \(usage\): 613 in, 20 out/);
    assert.match(answer, /> look at app.py\n\nReading it.\n\n\*\*Tool call `read`\*\*\n\n```json\n\{\n  "path": "app.py"\n\}\n```/);
    assert.doesNotMatch(answer, /1,796,034,171,225|1796034171225|"role"/);
    const result = entryMarkdown({ type: 'message', id: 't1', timestamp: '2026-11-30T10:18:25.000Z', message: {
      role: 'toolResult', toolName: 'read', toolCallId: 'c1', isError: false, content: [{ type: 'text', text: 'print(1)' }] } });
    assert.match(result, /^# Tool result\n\n- Written: .*\n- Entry: `t1`\n- Tool: `read`\n\nprint\(1\)\n$/);
    const bash = entryMarkdown({ type: 'message', id: 'b', message: { role: 'bashExecution', command: 'ls', output: 'a\nb', exitCode: 0 } });
    assert.match(bash, /```console\n\$ ls\na\nb\n```/);
  });

  it('generic objects: long strings fenced, lists bulleted, pipes escaped', () => {
    const md = objectToMarkdown({ a: 'x|y', long: 'l\nm', list: ['p', 'q'], empty: [], nested: { k: 1 } });
    assert.match(md, /\| A \| x\\\|y \|/);
    assert.match(md, /## Long\n\n```\nl\nm\n```/);
    assert.match(md, /## List\n\n- p\n- q/);
    assert.match(md, /## Empty\n\n\(none\)/);
    assert.match(md, /## Nested\n\n\| \| \|\n\|---\|---\|\n\| K \| 1 \|/);
  });
});
