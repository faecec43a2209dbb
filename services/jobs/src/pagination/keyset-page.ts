import type { ExpressionBuilder, SelectQueryBuilder } from "kysely";
import { validationError } from "@renderbus/errors";

export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 100;

/** Where a page ended: the (created_at, id) of its last row. */
export interface CursorPosition {
  createdAt: number;
  id: string;
}

/** The cursor is opaque to clients: the position of the last row of the page, base64url JSON. */
export function encodeCursor(position: CursorPosition): string {
  return Buffer.from(JSON.stringify([position.createdAt, position.id])).toString("base64url");
}

export function decodeCursor(cursor: string): CursorPosition {
  try {
    const [createdAt, id] = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as unknown[];
    // Checked to what the columns hold (bigint, our ids): a forged cursor must be a 400, not a database error.
    if (Number.isSafeInteger(createdAt) && (createdAt as number) >= 0 && typeof id === "string" && /^[A-Za-z0-9_]{1,100}$/.test(id)) {
      return { createdAt: createdAt as number, id };
    }
  } catch {
    // fall through to the validation error
  }
  throw validationError("cursor: is invalid");
}

/**
 * The page size a request asked for (0 or unset: the default).
 * @throws AppError VALIDATION_ERROR outside 1..MAX_PAGE_SIZE.
 */
export function pageSize(limit: number | undefined): number {
  const size = limit === 0 || limit === undefined ? DEFAULT_PAGE_SIZE : limit;
  if (!Number.isInteger(size) || size < 1 || size > MAX_PAGE_SIZE) throw validationError(`limit: must be between 1 and ${MAX_PAGE_SIZE}`);
  return size;
}

interface Keyed {
  created_at: number;
  id: string;
}

/**
 * Runs one page of a newest-first keyset walk on (created_at, id): rows after the cursor, `size` of them, and the
 * cursor of the next page when there is one. A walk is stable while rows are added: new rows sort before the
 * cursor, so pages never repeat or skip a row that existed when the walk began.
 */
export async function keysetPage<DB, TB extends keyof DB, Row extends Keyed>(
  query: SelectQueryBuilder<DB, TB, Row>,
  size: number,
  cursor: string | undefined,
): Promise<{ rows: Row[]; nextCursor: string | undefined }> {
  let paged = query;
  if (cursor) {
    const position = decodeCursor(cursor);
    // The table's own columns; kysely cannot see through the generic row type, hence the loose builder.
    paged = paged.where((eb: ExpressionBuilder<any, any>) =>
      eb.or([eb("created_at", "<", position.createdAt), eb.and([eb("created_at", "=", position.createdAt), eb("id", "<", position.id)])]),
    );
  }
  const rows = await (paged as SelectQueryBuilder<any, any, Row>).orderBy("created_at", "desc").orderBy("id", "desc").limit(size + 1).execute();
  const page = rows.slice(0, size);
  const last = page.at(-1);
  return { rows: page, nextCursor: rows.length > size && last ? encodeCursor({ createdAt: last.created_at, id: last.id }) : undefined };
}
