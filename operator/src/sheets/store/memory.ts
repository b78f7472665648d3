// The memory backend: the shared model with nothing behind it. For unit tests and throwaway clusters.
// Every transaction is "durable" the moment it is applied (there is nothing more durable to reach).

import { StoreBase } from './base.ts';
import type { Durability, StoreLimits } from './types.ts';

export const MEMORY_LIMITS: StoreLimits = {
  maxCellChars: 50_000, // same as Google Sheets, the larger of the two real backends
  maxCells: 10_000_000, // same as Google Sheets
};

export class MemoryStore extends StoreBase {
  readonly backend = 'memory' as const;
  constructor(limits: Partial<StoreLimits> = {}) {
    super({ ...MEMORY_LIMITS, ...limits });
  }
  protected async persist(_changed: string[], _durability: Durability): Promise<void> {}
  async flush(): Promise<void> {}
  async close(): Promise<void> {
    this.closed = true;
  }
}

export function openMemoryStore(limits: Partial<StoreLimits> = {}): MemoryStore {
  return new MemoryStore(limits);
}
