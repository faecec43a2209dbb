import type { Page } from "./types.js";

/**
 * A cursor-paginated list: iterate it with `for await` to get every item across pages (the next page is fetched
 * only when the previous one is used up), or call `firstPage()` / iterate `pages()` for page-level control.
 */
export class PageIterator<T> implements AsyncIterable<T> {
  constructor(private readonly fetchPage: (cursor: string | undefined) => Promise<Page<T>>, private readonly startCursor?: string) {}

  /** The first page only, with its `nextCursor`. */
  firstPage(): Promise<Page<T>> {
    return this.fetchPage(this.startCursor);
  }

  /** Every page in order, following `nextCursor` until it is null. */
  async *pages(): AsyncGenerator<Page<T>> {
    let cursor = this.startCursor;
    for (;;) {
      const page = await this.fetchPage(cursor);
      yield page;
      if (!page.nextCursor || page.data.length === 0) return;
      cursor = page.nextCursor;
    }
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T> {
    for await (const page of this.pages()) yield* page.data;
  }

  /** Collects up to `max` items (all of them by default) into an array. */
  async toArray(max = Infinity): Promise<T[]> {
    const items: T[] = [];
    if (max <= 0) return items;
    for await (const item of this) {
      items.push(item);
      if (items.length >= max) break;
    }
    return items;
  }
}
