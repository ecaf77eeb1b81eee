// Build `session/tree`-shaped results for unit tests, from (id, parentId) pairs in file order.
import type { TreeNode, TreeResult } from '../../src/core/protocol';

export interface Spec {
  id: string;
  parentId: string | null;
  kind?: string;
  label?: string | null;
  preview?: string;
}

export function makeTree(specs: readonly Spec[], leafId: string | null = specs.at(-1)?.id ?? null): TreeResult {
  const children = new Map<string, string[]>();
  const parents = new Map<string, string | null>();
  for (const s of specs) {
    parents.set(s.id, s.parentId);
    if (s.parentId !== null) {
      const list = children.get(s.parentId) ?? [];
      list.push(s.id);
      children.set(s.parentId, list);
    }
  }
  const onPath = new Set<string>();
  for (let id: string | null | undefined = leafId; id != null; id = parents.get(id)) onPath.add(id);
  // The daemon lists nodes depth first; the model must not depend on that, so keep file order.
  const nodes: TreeNode[] = specs.map((s) => ({
    id: s.id,
    parentId: s.parentId,
    type: 'message',
    role: s.kind ?? 'user',
    children: children.get(s.id) ?? [],
    label: s.label ?? null,
    kind: s.kind ?? 'user',
    preview: s.preview ?? `text of ${s.id}`,
    timestamp: null,
    isLeaf: s.id === leafId,
    onLeafPath: onPath.has(s.id),
  }));
  return { leafId, nodes };
}

/** A chain root -> ... of n entries named e0..e{n-1}. */
export function chain(n: number, prefix = 'e', parent: string | null = null): Spec[] {
  const out: Spec[] = [];
  for (let i = 0; i < n; i++) out.push({ id: `${prefix}${i}`, parentId: i === 0 ? parent : `${prefix}${i - 1}`, kind: i % 2 === 0 ? 'user' : 'assistant' });
  return out;
}
