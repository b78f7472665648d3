// What the three backends share: the in-memory book, transactions, versions and listeners.
// A backend adds persistence by implementing `persist` (called after each commit).

import { Book, commitTx, TxImpl } from './model.ts';
import {
  type ChangeEvent,
  ClosedError,
  ConflictError,
  type Durability,
  type Key,
  type Row,
  type Store,
  type StoreLimits,
  type TransactOptions,
  type Tx,
  type TxResult,
} from './types.ts';

export abstract class StoreBase implements Store {
  abstract readonly backend: 'memory' | 'xlsx' | 'google';
  readonly limits: StoreLimits;
  protected book = new Book();
  protected ver = 0;
  protected closed = false;
  private readonly listeners = new Set<(ev: ChangeEvent) => void>();

  constructor(limits: StoreLimits) {
    this.limits = limits;
  }

  version(): number {
    return this.ver;
  }
  tabs(): string[] {
    return [...this.book.grids.keys()];
  }
  headers(tab: string): string[] {
    return [...this.book.grid(tab).headers];
  }
  rows(tab: string): Row[] {
    return this.book.grid(tab).visibleRows();
  }
  get(tab: string, key: Key): Row | undefined {
    return new TxImpl(this.book, this.limits).get(tab, key);
  }

  async transact<T>(fn: (tx: Tx) => T, opts: TransactOptions = {}): Promise<TxResult<T>> {
    if (this.closed) throw new ClosedError('the store is closed');
    if (opts.ifVersion !== undefined && opts.ifVersion !== this.ver) {
      throw new ConflictError(
        `the store changed (version ${this.ver}, expected ${opts.ifVersion}); read again and retry`,
      );
    }
    const tx = new TxImpl(this.book, this.limits);
    const value = fn(tx);
    if (value instanceof Promise) throw new TypeError('a transaction function must be synchronous');
    const changed = commitTx(this.book, tx, this.limits);
    if (changed.length === 0) return { value, version: this.ver };
    this.ver++;
    const version = this.ver;
    this.emit({ source: 'local', tabs: changed, version });
    await this.persist(changed, opts.durability ?? 'durable');
    return { value, version };
  }

  onChange(listener: (ev: ChangeEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  protected emit(ev: ChangeEvent): void {
    for (const l of this.listeners) {
      try {
        l(ev);
      } catch {
        // A listener's bug must not fail the writer's transaction.
      }
    }
  }

  // Called after a commit with the tabs it changed. Resolve when the rule of `durability` is met.
  protected abstract persist(changed: string[], durability: Durability): Promise<void>;
  abstract flush(): Promise<void>;
  abstract close(): Promise<void>;
}
