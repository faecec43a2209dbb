import type { DeliveryStatus } from "../database.js";
import type { AttemptRow, DeliveryRow, DispatcherDb } from "./delivery.js";

export interface ListFilter {
  orgId: string;
  status?: string | undefined;
  event?: string | undefined;
  jobId?: string | undefined;
  limit: number;
  /** Id of the last delivery of the previous page (ids sort by creation time). */
  before?: string | undefined;
}

/** The org's deliveries, newest first, with their attempt logs. */
export async function listDeliveries(db: DispatcherDb, filter: ListFilter): Promise<{ rows: DeliveryRow[]; attempts: Map<string, AttemptRow[]>; hasMore: boolean }> {
  let query = db.selectFrom("deliveries").selectAll().where("org_id", "=", filter.orgId);
  if (filter.status) query = query.where("status", "=", filter.status as DeliveryStatus);
  if (filter.event) query = query.where("event", "=", filter.event);
  if (filter.jobId) query = query.where("job_id", "=", filter.jobId);
  if (filter.before) query = query.where("id", "<", filter.before);
  const rows = await query.orderBy("id", "desc").limit(filter.limit + 1).execute();
  const hasMore = rows.length > filter.limit;
  const page = rows.slice(0, filter.limit);
  return { rows: page, attempts: await attemptsOf(db, page.map((row) => row.id)), hasMore };
}

/** The attempt logs of deliveries, by delivery id, each in attempt order. */
export async function attemptsOf(db: DispatcherDb, ids: string[]): Promise<Map<string, AttemptRow[]>> {
  const byDelivery = new Map<string, AttemptRow[]>();
  if (ids.length === 0) return byDelivery;
  const attempts = await db.selectFrom("delivery_attempts").selectAll().where("delivery_id", "in", ids).orderBy("attempt").execute();
  for (const attempt of attempts) {
    const list = byDelivery.get(attempt.delivery_id) ?? [];
    list.push(attempt);
    byDelivery.set(attempt.delivery_id, list);
  }
  return byDelivery;
}

/** One of the org's deliveries, or undefined (another org's is not found either). */
export async function findDelivery(db: DispatcherDb, orgId: string, deliveryId: string): Promise<DeliveryRow | undefined> {
  return db.selectFrom("deliveries").selectAll().where("id", "=", deliveryId).where("org_id", "=", orgId).executeTakeFirst();
}
