// Wire types of the compactd daemon (see ../../../protocol.md). camelCase, as on the wire.
// Results are typed for the fields the client reads; the daemon may send more.

export type NodeKind =
  | 'user'
  | 'assistant'
  | 'toolResult'
  | 'bash'
  | 'compaction'
  | 'branchSummary'
  | 'customMessage'
  | 'custom'
  | 'label'
  | 'modelChange'
  | 'thinkingLevel'
  | 'sessionInfo'
  | 'developer'
  | 'system'
  | 'contextEdit'
  | 'usage'
  | 'resetBoundary';

export interface SessionParams {
  sessionId: string;
}

export interface OpenParams {
  path: string;
}

export interface ListFilesParams {
  cwd?: string;
  dir?: string;
}

export interface SessionFileInfo {
  path: string;
  sessionId: string;
  cwd: string | null;
  /** ISO time */
  modified: string;
  size: number;
  /** Held by the daemon. */
  open: boolean;
  /** The session's name (Pi's session_info, oh-my-pi's title), or null. */
  name?: string | null;
  /** The first user request, one line, or null. */
  firstRequest?: string | null;
  entryCount?: number | null;
}

export interface ListFilesResult {
  dir: string;
  files: SessionFileInfo[];
}

export interface LoadWarning {
  line: number;
  message: string;
}

export interface OpenResult {
  sessionId: string;
  version?: number | null;
  migratedFrom?: number | null;
  entryCount?: number;
  leafId: string | null;
  warnings?: LoadWarning[];
  path?: string | null;
  cwd?: string | null;
  name?: string | null;
  [key: string]: unknown;
}

export interface TreeNode {
  id: string;
  parentId: string | null;
  type: string;
  role: string | null;
  children: string[];
  label: string | null;
  /** A NodeKind; typed as string because a newer daemon may add kinds. */
  kind: string;
  preview: string;
  timestamp: string | null;
  isLeaf: boolean;
  onLeafPath: boolean;
  /** Compaction nodes: tokens before (as stored) and the estimate of the context right after. */
  tokensBefore?: number | null;
  tokensAfter?: number;
  /** Compaction nodes: two figures of one kind to compare (the writer's own, or chars/4 estimates). */
  contextBasis?: 'recorded' | 'estimate';
  contextBefore?: number;
  contextAfter?: number;
  contextShrank?: boolean;
  /** oh-my-pi compactions: the method and warning as recorded. */
  compactionMethod?: string;
  compactionWarning?: string;
  /** Branch-summary nodes: how many entries the summarized branch had (null: not in this file). */
  summarizedEntries?: number | null;
  /** A message a Pi 1.6 context edit takes out of the context or rewrites. */
  contextEdit?: 'omitted' | 'replaced';
}

export interface TreeResult {
  leafId: string | null;
  nodes: TreeNode[];
}

/** session/tree with `limit`: one page of a list, or (no branch/cursor) the leaf's screen. */
export interface TreePageParams extends SessionParams {
  limit: number;
  /** The list: a branch's first entry id, or null for the top level (omit for the leaf's screen). */
  branch?: string | null;
  after?: string;
  before?: string;
}

/** One branch below a branch point: its first entry and how many entries it holds. */
export interface TreeBranch {
  first: TreeNode;
  entryCount: number;
}

export interface TreeRowNode extends TreeNode {
  /** Branch points only: one per child, in `children` order. */
  branches?: TreeBranch[];
}

export interface TreeListPage {
  branch: string | null;
  rows: TreeRowNode[];
  hasMoreBefore: boolean;
  hasMoreAfter: boolean;
  /** Rows of the list before / after this page, not sent (older daemons leave them out). */
  moreBefore?: number;
  moreAfter?: number;
}

export interface TreePageResult {
  leafId: string | null;
  entryCount: number;
  /** From the top level down: the row of each list on the path to the leaf. */
  leafPath: { branch: string | null; throughId: string }[];
  lists: TreeListPage[];
}

export interface EntryParams extends SessionParams {
  entryId: string;
}

export interface EntryResult {
  entry: Record<string, unknown>;
  label: string | null;
  [key: string]: unknown;
}

export interface PositionParams extends SessionParams {
  leafId?: string | null;
}

export interface TokenStats {
  contextTokens: number;
  contextWindow: number;
  reserveTokens: number;
  threshold: number;
  shouldCompact: boolean;
  exactTokens?: number | null;
  estimatedTokens?: number | null;
  usageTokens?: number | null;
  percent?: number | null;
  [key: string]: unknown;
}

export interface PrepareCompactionParams extends PositionParams {
  keepRecentTokens?: number;
  reserveTokens?: number;
  /** Default true; false leaves conversationText and turnPrefixText null (not serialized). */
  includeText?: boolean;
}

/** The dry run (null when nothing would be compacted). Rendered generically, so only a few
 * fields are named here. */
export interface PrepareCompactionResult {
  firstKeptEntryId?: string;
  tokensBefore?: number;
  estimatedTokensAfter?: number;
  conversationText?: string;
  [key: string]: unknown;
}

export interface WorkDoneParams {
  workDoneToken?: string | number;
}

export interface CompactParams extends SessionParams, WorkDoneParams {
  customInstructions?: string;
}

export interface CompactResult {
  summary: string;
  firstKeptEntryId: string;
  tokensBefore: number;
  estimatedTokensAfter: number;
  /** The new compaction entry. */
  entryId: string;
  fromHook?: boolean;
  warnings?: string[];
  [key: string]: unknown;
}

export interface NavigateParams extends SessionParams, WorkDoneParams {
  targetId: string;
  summarize: boolean;
  customInstructions?: string;
  replaceInstructions?: boolean;
  label?: string;
}

export interface NavigateResult {
  cancelled: boolean;
  aborted?: boolean;
  editorText?: string | null;
  summaryEntryId?: string | null;
  newLeafId: string | null;
  oldLeafId: string | null;
  warnings?: string[];
  [key: string]: unknown;
}

export interface LabelParams extends SessionParams {
  targetId: string;
  /** Empty or absent clears the label. */
  label?: string | null;
}

export interface LabelResult {
  entryId: string;
  targetId: string;
  label: string | null;
  leafId: string | null;
}

export interface ForkParams extends SessionParams {
  leafId?: string | null;
  path?: string;
  inMemory?: boolean;
}

/** The new session (already open in the daemon), as session/open reports it. */
export interface ForkResult extends OpenResult {
  forkedFrom: string;
  forkedAt: string;
}

export interface PruneParams extends SessionParams {
  dryRun?: boolean;
}

export interface PruneResult {
  prunedCount: number;
  tokensSaved: number;
  entryIds: string[];
  [key: string]: unknown;
}

/** session/didChange: entries appended, leaf moved, entries rewritten, file reloaded. */
export interface DidChangeParams {
  sessionId: string;
  /** appended | leafMoved | rewritten | reloaded (another program rewrote the file: refetch everything) */
  kind: string;
  entryIds: string[];
  leafId: string | null;
  /** When entries were written (appended, leafMoved): they as session/tree nodes. */
  nodes?: TreeNode[];
  /** Labels those entries set on entries (null: cleared). */
  labels?: Record<string, string | null>;
  [key: string]: unknown;
}

export interface CompactionStartParams {
  sessionId: string;
  reason?: string;
  [key: string]: unknown;
}

export interface CompactionEndParams {
  sessionId: string;
  reason?: string;
  result?: Record<string, unknown> | null;
  aborted?: boolean;
  errorMessage?: string;
  willRetry?: boolean;
  [key: string]: unknown;
}

/** Server-to-client hook requests; see HookName in hooks.ts. */
export type HookEvent = Record<string, unknown>;
export type HookAnswer = Record<string, unknown> | null;

export const Methods = {
  open: 'session/open',
  close: 'session/close',
  listFiles: 'session/listFiles',
  tree: 'session/tree',
  context: 'session/context',
  entry: 'session/entry',
  tokenStats: 'session/tokenStats',
  prepareCompaction: 'session/prepareCompaction',
  compact: 'session/compact',
  navigate: 'session/navigate',
  label: 'session/label',
  fork: 'session/fork',
  prune: 'session/prune',
  abort: 'session/abort',
  didChange: 'session/didChange',
  compactionStart: 'session/compactionStart',
  compactionEnd: 'session/compactionEnd',
  beforeCompact: 'session/beforeCompact',
  compacting: 'session/compacting',
  beforeTree: 'session/beforeTree',
} as const;

/** LSP error code for a request the client cancelled. */
export const REQUEST_CANCELLED = -32800;

/** The daemon's own error codes (protocol.md, "Errors"). */
export const ErrorCodes = {
  unknownSession: -32010,
  entryNotFound: -32011,
  sessionBusy: -32012,
  nothingToCompact: -32013,
  settingsError: -32014,
  summarizationFailed: -32015,
  concurrentModification: -32016,
  invalidSessionFile: -32017,
  fileError: -32018,
  cancelledByHook: -32019,
  sessionConflict: -32020,
} as const;
