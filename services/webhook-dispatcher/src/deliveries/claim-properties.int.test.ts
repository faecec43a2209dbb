import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import fc from "fast-check";
import { sql, type Kysely } from "kysely";
import { createDatabase, migrateToLatest, type Database } from "@renderbus/db";
import { createTestDatabase } from "@renderbus/testing";
import { migrations } from "../../migrations/index.js";
import { DISPATCHER_SCHEMA, type DispatcherTables } from "../database.js";
import { claimDueDeliveries, type DueClaim } from "./delivery-queue.js";
import { claimGatedDeliveries, RATE_SLOT_HORIZON_MS } from "./endpoint-flow.js";
import type { DeliveryRow } from "./delivery.js";

/**
 * Property tests of claimDueDeliveries: random queues (1-40 orgs, each with ep_default and up to three more endpoints,
 * ordinary or gated, holding due, waiting, leased, abandoned and finished deliveries), claimed by one claim or by 2-4
 * at once (with a gated claim, sometimes), each run on freshly emptied tables. Checked against models computed here
 * from the rows as they were before each claim:
 * 1. a row is leased by one claim only, was due before it (next attempt come, no live lease), is now leased with that
 *    claim's token until its lease's end, and no row the claims did not return changed;
 * 2. no claimDueDeliveries row is of a gated endpoint (and every claimGatedDeliveries row is);
 * 3. each claim keeps each org within its cap, counting the leases the org held before: claims at once may together
 *    exceed it (each counts the leases in its own snapshot), which is counted, not failed;
 * 4. a claim alone takes something whenever something is claimable and its walk can visit every (org, endpoint) pair
 *    with a queued delivery (no starvation), and never more than the ideal's count; how far it falls short of the
 *    ideal is characterized by designedClaim, which it must match row for row: an ideal row is left out only when its
 *    endpoint has rows in the head, lies past the walk's bounds, or past the walk's slot budget (see Shortfall);
 * 5. a claim alone whose head holds every due row (at most 4 * limit) takes exactly the ideal: the `limit` oldest
 *    claimable rows by (next attempt, id), each org at most its free slots;
 * 6. a claim alone that leased rows says whether it walked, as designedClaim does: every claim that leaves an ideal row
 *    behind walked (4), so the sender, which claims again at once after such a claim, leaves nothing waiting for its
 *    next wake-up.
 */

let database: Database<DispatcherTables>;
let db: Kysely<DispatcherTables>;

/** The claims' clock: every claim is given `now`, so a generated queue means the same whenever it runs. */
const START = 1_800_000_000_000;
/** Short, so that a later round may find an earlier round's leases run out. */
const LEASE_MS = 50;
/** As claimDueDeliveries sizes its head (CLAIM_WINDOW_PER_ROW) and bounds its walk (WALK_VISITS_PER_WINDOW_ROW). */
const WINDOW_PER_ROW = 4;
const WALK_VISITS_PER_WINDOW_ROW = 4;
/** Runs of the property (about 50 ms each on a loaded 2-core machine); CLAIM_PROPERTY_RUNS asks for more when looking for rare cases. */
const RUNS = Number(process.env.CLAIM_PROPERTY_RUNS ?? 60);

beforeAll(async () => {
  // Enough connections for four claims and a gated claim at once.
  database = createDatabase<DispatcherTables>({ url: await createTestDatabase("dispatcherclaimprops"), schema: DISPATCHER_SCHEMA, maxConnections: 8 });
  db = database.db;
  await migrateToLatest(db, DISPATCHER_SCHEMA, migrations);
});
afterAll(async () => database?.close());

// ---------------------------------------------------------------------------------------------------------------------
// Generated queues

type EndpointKind = "ordinary" | "fifo" | "rate-limited" | "fifo and rate-limited";

/**
 * A delivery as generated, relative to the run's start: `due` (pending, next attempt up to `ageMs` ago), `waiting` (a
 * retry `ageMs` + 1 ahead), `leased` (another replica holds it until `ageMs` + 1 ahead: its next attempt is its
 * lease's end, as a claim leaves it), `abandoned` (a lease that ran out `ageMs` ago: due), `finished` (succeeded,
 * failed or skipped: nothing owed), `unqueued` (pending, never due: a test event).
 */
type GeneratedDelivery =
  | { state: "due" | "waiting" | "leased" | "abandoned"; ageMs: number }
  | { state: "finished"; status: "succeeded" | "failed" | "skipped" }
  | { state: "unqueued" };

interface GeneratedEndpoint {
  kind: EndpointKind;
  /** Added to the age of its due deliveries: an old backlog that heads the queue. */
  backlogAgeMs: number;
  deliveries: GeneratedDelivery[];
}

/** An org's endpoints: the first is `ep_default` (the org's webhookUrl, an ordinary endpoint without a row). */
interface GeneratedOrg {
  endpoints: GeneratedEndpoint[];
}

interface ClaimRequest {
  limit: number;
  /** Where the walk starts in hashtext order (claimDueDeliveries draws it from Math.random). */
  walkStart: number;
}

/** Claims that run after the ones before ended, `advanceMs` later: one alone, or several at once (a gated claim too). */
type Round =
  | { kind: "single"; advanceMs: number; claim: ClaimRequest }
  | { kind: "concurrent"; advanceMs: number; claims: ClaimRequest[]; gatedLimit: number | null };

interface Scenario {
  orgs: GeneratedOrg[];
  orgMaxInFlight: number;
  rounds: Round[];
}

const age = fc.oneof({ weight: 1, arbitrary: fc.constant(0) }, { weight: 4, arbitrary: fc.integer({ min: 0, max: 300 }) });
const generatedDelivery: fc.Arbitrary<GeneratedDelivery> = fc.oneof(
  { weight: 12, arbitrary: fc.record({ state: fc.constant("due" as const), ageMs: age }) },
  { weight: 2, arbitrary: fc.record({ state: fc.constant("waiting" as const), ageMs: age }) },
  { weight: 3, arbitrary: fc.record({ state: fc.constant("leased" as const), ageMs: age }) },
  { weight: 1, arbitrary: fc.record({ state: fc.constant("abandoned" as const), ageMs: age }) },
  { weight: 1, arbitrary: fc.record({ state: fc.constant("finished" as const), status: fc.constantFrom("succeeded" as const, "failed" as const, "skipped" as const) }) },
  { weight: 1, arbitrary: fc.record({ state: fc.constant("unqueued" as const) }) },
);
// Most endpoints have a few deliveries; some a backlog, so that gated endpoints and capped orgs fill a claim's head.
const deliveries = fc.oneof({ weight: 4, arbitrary: fc.array(generatedDelivery, { maxLength: 5 }) }, { weight: 1, arbitrary: fc.array(generatedDelivery, { minLength: 8, maxLength: 40 }) });
const endpointKind = fc.oneof(
  { weight: 3, arbitrary: fc.constant<EndpointKind>("ordinary") },
  { weight: 4, arbitrary: fc.constantFrom<EndpointKind>("fifo", "rate-limited", "fifo and rate-limited") },
);
const backlogAgeMs = fc.oneof({ weight: 3, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.constant(1000) });
const generatedOrg: fc.Arbitrary<GeneratedOrg> = fc
  .tuple(fc.record({ backlogAgeMs, deliveries }), fc.array(fc.record({ kind: endpointKind, backlogAgeMs, deliveries }), { maxLength: 3 }))
  .map(([defaultEndpoint, others]) => ({ endpoints: [{ kind: "ordinary", ...defaultEndpoint }, ...others] }));
// Small limits more often than not: the walk only runs when `4 * limit` due rows fill the head.
const limit = fc.oneof({ weight: 3, arbitrary: fc.integer({ min: 1, max: 6 }) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 64 }) });
const claimRequest: fc.Arbitrary<ClaimRequest> = fc.record({ limit, walkStart: fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }) });
// Often no time passes: rows due exactly at `now` are due.
const advanceMs = fc.oneof(fc.constant(0), fc.nat(60));
const round: fc.Arbitrary<Round> = fc.oneof(
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("single" as const), advanceMs, claim: claimRequest }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("concurrent" as const),
      advanceMs,
      claims: fc.array(claimRequest, { minLength: 2, maxLength: 4 }),
      gatedLimit: fc.option(fc.integer({ min: 1, max: 8 })),
    }),
  },
);
const scenario: fc.Arbitrary<Scenario> = fc.record({
  // Few orgs half the time: with many, a small claim's walk mostly meets its bounds.
  orgs: fc.oneof(fc.array(generatedOrg, { minLength: 1, maxLength: 6 }), fc.array(generatedOrg, { minLength: 1, maxLength: 40 })),
  orgMaxInFlight: fc.integer({ min: 1, max: 8 }),
  rounds: fc.array(round, { minLength: 1, maxLength: 3 }),
});

const orgIdOf = (index: number) => `org_${String(index).padStart(2, "0")}`;
const endpointIdOf = (index: number) => (index === 0 ? "ep_default" : `ep_${index}`);
/** Delivery ids in an order unrelated to insertion order (the claim breaks due-time ties by id, the table by position). */
const deliveryIdOf = (index: number) => `del_${String((index * 7919) % 100_003).padStart(6, "0")}`;
/** An (org, endpoint) pair as one key. */
const pairKey = (orgId: string, endpointId: string) => `${orgId}/${endpointId}`;

/** Stores a scenario's endpoints and deliveries in the emptied tables; the set of its gated endpoints. */
async function store(orgs: GeneratedOrg[]): Promise<Set<string>> {
  await sql`truncate deliveries, endpoints, endpoint_queues cascade`.execute(db);
  const gated = new Set<string>();
  const endpoints: Array<{ orgId: string; id: string; ordering: string; rate: number | null }> = [];
  const rows: Array<{ id: string; orgId: string; endpointId: string; status: string; next: number | null; leaseUntil: number | null; leaseToken: string | null; sequence: number | null }> = [];
  orgs.forEach((org, orgIndex) => {
    const orgId = orgIdOf(orgIndex);
    org.endpoints.forEach((endpoint, endpointIndex) => {
      const endpointId = endpointIdOf(endpointIndex);
      const fifo = endpoint.kind === "fifo" || endpoint.kind === "fifo and rate-limited";
      const rate = endpoint.kind === "rate-limited" || endpoint.kind === "fifo and rate-limited" ? 1 + (endpointIndex % 3) : null;
      if (endpointIndex > 0) endpoints.push({ orgId, id: endpointId, ordering: fifo ? "fifo" : "none", rate });
      if (fifo || rate !== null) gated.add(pairKey(orgId, endpointId));
      endpoint.deliveries.forEach((delivery, position) => {
        const row = { id: deliveryIdOf(rows.length), orgId, endpointId, status: "pending", next: null as number | null, leaseUntil: null as number | null, leaseToken: null as string | null, sequence: fifo ? position + 1 : null };
        switch (delivery.state) {
          case "due":
            row.next = START - endpoint.backlogAgeMs - delivery.ageMs;
            break;
          case "waiting":
            row.next = START + 1 + delivery.ageMs;
            break;
          case "leased":
            row.next = row.leaseUntil = START + 1 + delivery.ageMs;
            row.leaseToken = "replica-other";
            break;
          case "abandoned":
            row.next = row.leaseUntil = START - delivery.ageMs;
            row.leaseToken = "replica-gone";
            break;
          case "finished":
            row.status = delivery.status;
            break;
          case "unqueued":
            break;
        }
        rows.push(row);
      });
    });
  });
  if (endpoints.length > 0) {
    await sql`insert into endpoints (org_id, id, url, events, ordering, rate_limit_per_second, created_at, updated_at)
              select org_id, id, 'http://127.0.0.1:9/', '{*}', ordering, rate, 0, 0
              from unnest(${endpoints.map((e) => e.orgId)}::text[], ${endpoints.map((e) => e.id)}::text[], ${endpoints.map((e) => e.ordering)}::text[],
                          ${endpoints.map((e) => e.rate)}::int[]) as e(org_id, id, ordering, rate)`.execute(db);
  }
  if (rows.length > 0) {
    const column = <T>(pick: (row: (typeof rows)[number]) => T) => rows.map(pick);
    await sql`
      insert into deliveries (id, org_id, endpoint_id, status, next_attempt_at, lease_until, lease_token, sequence, event, source_event_id, url, body, event_at, created_at, trace_headers)
      select id, org_id, endpoint_id, status, next_attempt_at, lease_until, lease_token, sequence, 'job.running', 'evt_' || id, 'http://127.0.0.1:9/', '{}', ${START}::bigint, ${START}::bigint, '{}'
      from unnest(${column((r) => r.id)}::text[], ${column((r) => r.orgId)}::text[], ${column((r) => r.endpointId)}::text[], ${column((r) => r.status)}::text[],
                  ${column((r) => r.next)}::bigint[], ${column((r) => r.leaseUntil)}::bigint[], ${column((r) => r.leaseToken)}::text[], ${column((r) => r.sequence)}::bigint[])
        as r(id, org_id, endpoint_id, status, next_attempt_at, lease_until, lease_token, sequence)`.execute(db);
  }
  return gated;
}

// ---------------------------------------------------------------------------------------------------------------------
// Models

/** What a claim may read or change of a delivery. */
interface StoredDelivery {
  id: string;
  orgId: string;
  endpointId: string;
  status: string;
  next: number | null;
  leaseUntil: number | null;
  leaseToken: string | null;
}

/** The queue before a claim, and what the models need to know beside it. */
interface Queue {
  deliveries: StoredDelivery[];
  gated: Set<string>;
  now: number;
  orgMaxInFlight: number;
}

async function readQueue(): Promise<Map<string, StoredDelivery>> {
  const rows = await db.selectFrom("deliveries").select(["id", "org_id", "endpoint_id", "status", "next_attempt_at", "lease_until", "lease_token"]).execute();
  return new Map(
    rows.map((row) => [
      row.id,
      { id: row.id, orgId: row.org_id, endpointId: row.endpoint_id, status: row.status, next: row.next_attempt_at, leaseUntil: row.lease_until, leaseToken: row.lease_token },
    ]),
  );
}

/** Due: its next attempt has come and no lease holds it (a lease that ran out holds nothing). */
const isDue = (delivery: StoredDelivery, now: number) => delivery.next !== null && delivery.next <= now && (delivery.leaseUntil === null || delivery.leaseUntil <= now);
const isGated = (queue: Queue, delivery: { orgId: string; endpointId: string }) => queue.gated.has(pairKey(delivery.orgId, delivery.endpointId));
/** Text in the test database's order (its locale is C). */
const compareText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
/** Due time, then id: the claim's order. */
const byDue = (a: StoredDelivery, b: StoredDelivery) => a.next! - b.next! || compareText(a.id, b.id);

/** Leases the org holds now, of any endpoint and any replica. */
function leasesOf(queue: Queue): (orgId: string) => number {
  const counts = new Map<string, number>();
  for (const delivery of queue.deliveries) {
    if (delivery.leaseUntil !== null && delivery.leaseUntil > queue.now) counts.set(delivery.orgId, (counts.get(delivery.orgId) ?? 0) + 1);
  }
  return (orgId) => counts.get(orgId) ?? 0;
}

/**
 * The documented ideal: the oldest claimable deliveries (due, of ordinary endpoints), at most `limit`, an org getting
 * at most its free slots (orgMaxInFlight less the leases it holds), its oldest first.
 */
function oldestClaimable(queue: Queue, limit: number): StoredDelivery[] {
  const leases = leasesOf(queue);
  const taken = new Map<string, number>();
  const chosen: StoredDelivery[] = [];
  for (const delivery of queue.deliveries.filter((d) => isDue(d, queue.now) && !isGated(queue, d)).sort(byDue)) {
    if (chosen.length === limit) break;
    const orgTaken = taken.get(delivery.orgId) ?? 0;
    if (leases(delivery.orgId) + orgTaken >= queue.orgMaxInFlight) continue;
    taken.set(delivery.orgId, orgTaken + 1);
    chosen.push(delivery);
  }
  return chosen;
}

/**
 * Why the bounded claim leaves out a row the ideal takes (see designedClaim):
 * - `endpoint in head`: the head holds some of its endpoint's due rows but not this one, and the walk skips the head's
 *   endpoints, so it reaches none of that endpoint's rows beyond the head;
 * - `walk bounds`: the walk stopped (4 * window endpoints visited, or window endpoints found) before its endpoint;
 * - `walk slot budget`: its endpoint was found, but the free slots of the endpoints found before it (each endpoint
 *   counted with its org's free slots, however few due rows it has, and an org's once per endpoint) filled the window;
 * - `displaced`: none of these, but the limit was filled by older rows the ideal does not take (their orgs' slots went
 *   to the rows left out for one of the reasons above).
 */
type Shortfall = "endpoint in head" | "walk bounds" | "walk slot budget" | "displaced";

interface DesignedClaim {
  chosen: Set<string>;
  walked: boolean;
  /** Each row the ideal takes and this claim does not, with why. */
  leftBehind: Map<string, Shortfall | undefined>;
}

/**
 * claimDueDeliveries' algorithm as its comment describes it, run on the queue: the head (the first `4 * limit` due
 * rows), and when the head is full yet yields fewer than `limit`, the walk over (org, endpoint) pairs in hashtext
 * order from `walkStart`; of the endpoints it found, the ones with the earliest due work while the free slots before
 * them stay below the window, each giving its earliest due rows; then the oldest candidates within each org's cap.
 * Undefined when the outcome depends on the order of rows with equal due times (the head and an endpoint's rows are
 * read by due time alone). It mirrors the statement: a change to the algorithm changes it too.
 */
function designedClaim(queue: Queue, limit: number, walkStart: number, hashOf: (orgId: string) => number): DesignedClaim | undefined {
  const { now, orgMaxInFlight } = queue;
  const window = limit * WINDOW_PER_ROW;
  const leases = leasesOf(queue);
  const pairOf = (delivery: { orgId: string; endpointId: string }) => pairKey(delivery.orgId, delivery.endpointId);
  const due = queue.deliveries.filter((d) => isDue(d, now)).sort((a, b) => a.next! - b.next!);
  if (due.length > window && due[window - 1]!.next === due[window]!.next) return undefined;
  const head = due.slice(0, window);
  const candidates = head.filter((d) => !isGated(queue, d));
  const headTaken = new Map<string, number>();
  let claimableInHead = 0;
  for (const delivery of [...candidates].sort(byDue)) {
    const orgRow = (headTaken.get(delivery.orgId) ?? 0) + 1;
    headTaken.set(delivery.orgId, orgRow);
    if (leases(delivery.orgId) + orgRow <= orgMaxInFlight) claimableInHead += 1;
  }
  const walked = head.length === window && claimableInHead < limit;
  const headPairs = new Set(head.map(pairOf));
  const visited = new Set<string>();
  const overBudget = new Set<string>();
  if (walked) {
    const pairs = new Map<string, { orgId: string; endpointId: string; firstDue: number }>();
    for (const delivery of queue.deliveries) {
      if (delivery.next === null) continue;
      const pair = pairs.get(pairOf(delivery));
      if (pair === undefined || delivery.next < pair.firstDue) pairs.set(pairOf(delivery), { orgId: delivery.orgId, endpointId: delivery.endpointId, firstDue: delivery.next });
    }
    const ordered = [...pairs.values()].sort((a, b) => hashOf(a.orgId) - hashOf(b.orgId) || compareText(a.orgId, b.orgId) || compareText(a.endpointId, b.endpointId));
    const found: Array<{ orgId: string; endpointId: string; firstDue: number; inFlight: number }> = [];
    for (const pair of [...ordered.filter((p) => hashOf(p.orgId) >= walkStart), ...ordered.filter((p) => hashOf(p.orgId) < walkStart)]) {
      if (visited.size >= window * WALK_VISITS_PER_WINDOW_ROW || found.length >= window) break;
      visited.add(pairOf(pair));
      const inFlight = leases(pair.orgId);
      if (pair.firstDue <= now && !headPairs.has(pairOf(pair)) && !isGated(queue, pair) && inFlight < orgMaxInFlight) found.push({ ...pair, inFlight });
    }
    found.sort((a, b) => a.firstDue - b.firstDue || compareText(a.orgId, b.orgId) || compareText(a.endpointId, b.endpointId));
    let slotsBefore = 0;
    for (const endpoint of found) {
      if (slotsBefore < window) {
        const rows = queue.deliveries.filter((d) => pairOf(d) === pairOf(endpoint) && isDue(d, now)).sort((a, b) => a.next! - b.next!);
        const take = Math.min(orgMaxInFlight - endpoint.inFlight, limit);
        if (rows.length > take && rows[take - 1]!.next === rows[take]!.next) return undefined;
        candidates.push(...rows.slice(0, take));
      } else {
        overBudget.add(pairOf(endpoint));
      }
      slotsBefore += orgMaxInFlight - endpoint.inFlight;
    }
  }
  const taken = new Map<string, number>();
  const chosen = candidates
    .sort(byDue)
    .filter((delivery) => {
      const orgRow = (taken.get(delivery.orgId) ?? 0) + 1;
      taken.set(delivery.orgId, orgRow);
      return leases(delivery.orgId) + orgRow <= orgMaxInFlight;
    })
    .slice(0, limit);
  const chosenIds = new Set(chosen.map((d) => d.id));
  const ideal = oldestClaimable(queue, limit);
  const idealIds = new Set(ideal.map((d) => d.id));
  const leftBehind = new Map<string, Shortfall | undefined>();
  for (const delivery of ideal) {
    if (chosenIds.has(delivery.id)) continue;
    const pair = pairOf(delivery);
    const reason: Shortfall | undefined = !walked
      ? undefined
      : headPairs.has(pair)
        ? "endpoint in head"
        : !visited.has(pair)
          ? "walk bounds"
          : overBudget.has(pair)
            ? "walk slot budget"
            : chosen.some((other) => !idealIds.has(other.id) && byDue(other, delivery) < 0)
              ? "displaced"
              : undefined;
    leftBehind.set(delivery.id, reason);
  }
  return { chosen: chosenIds, walked, leftBehind };
}

// ---------------------------------------------------------------------------------------------------------------------
// Running claims

/**
 * What the runs covered, and where a claim alone took fewer rows than the ideal or other ones, by reason: checked to
 * be non-trivial at the end, printed with CLAIM_PROPERTY_STATS=1.
 */
const coverage = {
  runs: 0,
  singleClaims: 0,
  comparedToIdeal: 0,
  checkedForStarvation: 0,
  predicted: 0,
  walked: 0,
  shortOfIdeal: new Map<string, number>(),
  concurrentRounds: 0,
  concurrentRoundsOverCap: 0,
  mostOverCap: 0,
};

/** Claims with `Math.random` answering each its generated walk start: a failing run replays and shrinks exactly. */
function startClaims(requests: ClaimRequest[], orgMaxInFlight: number, now: number): Array<Promise<DueClaim>> {
  const random = vi.spyOn(Math, "random");
  try {
    return requests.map((request, index) => {
      // claimDueDeliveries draws its start before its first await: floor(random * 2^32) - 2^31 is `walkStart`.
      random.mockReturnValue((request.walkStart + 2 ** 31) / 2 ** 32);
      return claimDueDeliveries(db, { limit: request.limit, orgMaxInFlight, leaseMs: LEASE_MS, leaseToken: `claim-${index}`, now });
    });
  } finally {
    random.mockRestore();
  }
}

async function hashesOf(orgIds: string[]): Promise<Map<string, number>> {
  const { rows } = await sql<{ org_id: string; hash: number }>`select org_id, hashtext(org_id) as hash from unnest(${orgIds}::text[]) as o(org_id)`.execute(db);
  return new Map(rows.map((row) => [row.org_id, row.hash]));
}

/**
 * Checks what every claim must do, alone or not: each row leased by one claim only, every one due before and of an
 * ordinary endpoint (the gated claim's: of a gated one), now leased with its claim's token until its lease's end; no
 * other row changed; each claim within each org's cap, counting the leases the org held before.
 */
function checkLeases(queue: Queue, before: Map<string, StoredDelivery>, after: Map<string, StoredDelivery>, claims: Array<{ token: string; rows: DeliveryRow[]; gated: boolean }>) {
  const leases = leasesOf(queue);
  const holder = new Map<string, string>();
  for (const claim of claims) {
    const perOrg = new Map<string, number>();
    for (const row of claim.rows) {
      expect(holder.get(row.id), `${row.id} leased by ${holder.get(row.id)} and ${claim.token}`).toBeUndefined();
      holder.set(row.id, claim.token);
      const was = before.get(row.id)!;
      expect(isDue(was, queue.now), `${row.id} was not due: ${JSON.stringify(was)}`).toBe(true);
      expect(isGated(queue, was), `${row.id} of ${was.orgId}/${was.endpointId} taken by ${claim.token}`).toBe(claim.gated);
      const leaseUntil = queue.now + LEASE_MS + (claim.gated ? RATE_SLOT_HORIZON_MS : 0);
      expect(after.get(row.id), `${row.id} as ${claim.token} should have left it`).toEqual({ ...was, next: leaseUntil, leaseUntil, leaseToken: claim.token });
      expect([row.next_attempt_at, row.lease_until, row.lease_token], `${row.id} as ${claim.token} returned it`).toEqual([leaseUntil, leaseUntil, claim.token]);
      perOrg.set(was.orgId, (perOrg.get(was.orgId) ?? 0) + 1);
    }
    for (const [orgId, count] of perOrg) expect(leases(orgId) + count, `${claim.token} over ${orgId}'s cap`).toBeLessThanOrEqual(queue.orgMaxInFlight);
  }
  for (const [id, was] of before) if (!holder.has(id)) expect(after.get(id), `${id} changed without being claimed`).toEqual(was);
  expect(after.size).toBe(before.size);
}

/** Properties 4 to 6 for a claim alone that took `rows` from `queue`. */
function checkClaimAlone(queue: Queue, request: ClaimRequest, { rows, walked }: DueClaim, hashes: Map<string, number>) {
  const { limit, walkStart } = request;
  const claimed = rows.map((row) => row.id).sort();
  const ideal = oldestClaimable(queue, limit);
  coverage.singleClaims += 1;
  expect(claimed.length).toBeLessThanOrEqual(ideal.length);
  if (queue.deliveries.filter((d) => isDue(d, queue.now)).length <= limit * WINDOW_PER_ROW) {
    coverage.comparedToIdeal += 1;
    expect(claimed, "the head held every due row").toEqual(ideal.map((d) => d.id).sort());
  }
  const queuedPairs = new Set(queue.deliveries.filter((d) => d.next !== null).map((d) => pairKey(d.orgId, d.endpointId))).size;
  if (ideal.length > 0 && queuedPairs <= limit * WINDOW_PER_ROW * WALK_VISITS_PER_WINDOW_ROW) {
    coverage.checkedForStarvation += 1;
    expect(claimed.length, "nothing claimed though the walk could reach every endpoint").toBeGreaterThan(0);
  }
  const designed = designedClaim(queue, limit, walkStart, (orgId) => hashes.get(orgId)!);
  if (designed === undefined) return;
  coverage.predicted += 1;
  if (designed.walked) coverage.walked += 1;
  expect(claimed, "the rows the documented algorithm picks").toEqual([...designed.chosen].sort());
  for (const [id, reason] of designed.leftBehind) expect(reason, `${id} left out for no documented reason`).toBeDefined();
  // A claim that leased rows says whether it walked, so that its caller claims again at once for what it left.
  if (rows.length > 0) expect(walked, "whether the claim walked").toBe(designed.walked);
  if (designed.leftBehind.size > 0) {
    const key = `${[...new Set(designed.leftBehind.values())].sort().join(" + ")}: ${designed.chosen.size < ideal.length ? "fewer rows" : "other rows"}`;
    coverage.shortOfIdeal.set(key, (coverage.shortOfIdeal.get(key) ?? 0) + 1);
  }
}

async function runScenario({ orgs, orgMaxInFlight, rounds }: Scenario): Promise<void> {
  coverage.runs += 1;
  const gated = await store(orgs);
  const hashes = await hashesOf(orgs.map((_, index) => orgIdOf(index)));
  let now = START;
  for (const round of rounds) {
    now += round.advanceMs;
    const before = await readQueue();
    const queue: Queue = { deliveries: [...before.values()], gated, now, orgMaxInFlight };
    if (round.kind === "single") {
      const claim = await startClaims([round.claim], orgMaxInFlight, now)[0]!;
      checkLeases(queue, before, await readQueue(), [{ token: "claim-0", rows: claim.rows, gated: false }]);
      checkClaimAlone(queue, round.claim, claim, hashes);
      continue;
    }
    const gatedClaim =
      round.gatedLimit === null
        ? Promise.resolve([])
        : claimGatedDeliveries(db, { limit: round.gatedLimit, orgMaxInFlight, leaseMs: LEASE_MS, leaseToken: "gated", now }).then((claimed) => claimed.map((c) => c.row));
    const [gatedRows, ...results] = await Promise.all([gatedClaim, ...startClaims(round.claims, orgMaxInFlight, now)]);
    const claims = [...results.map(({ rows }, index) => ({ token: `claim-${index}`, rows, gated: false })), { token: "gated", rows: gatedRows, gated: true }];
    checkLeases(queue, before, await readQueue(), claims);
    // Together they may exceed an org's cap (each claim counts the leases in its own snapshot): counted, not failed.
    const leases = leasesOf(queue);
    const perOrg = new Map<string, number>();
    for (const row of claims.flatMap((claim) => claim.rows)) perOrg.set(row.org_id, (perOrg.get(row.org_id) ?? 0) + 1);
    const overCap = Math.max(0, ...[...perOrg].map(([orgId, count]) => leases(orgId) + count - orgMaxInFlight));
    coverage.concurrentRounds += 1;
    if (overCap > 0) coverage.concurrentRoundsOverCap += 1;
    coverage.mostOverCap = Math.max(coverage.mostOverCap, overCap);
  }
}

describe("claiming due deliveries from random queues", () => {
  it("leases only due rows of ordinary endpoints, each to one claim, within each org's cap; alone, the oldest where the head holds every due row, and what its algorithm picks", { timeout: 120_000 }, async () => {
    // Shrinking a failure re-runs the scenario hundreds of times: it stops after 90 s with the smallest case found.
    await fc.assert(fc.asyncProperty(scenario, runScenario), { numRuns: RUNS, plugins: [fc.interruptAfterTimeLimit(90_000)] });
    if (process.env.CLAIM_PROPERTY_STATS) console.log(JSON.stringify({ ...coverage, shortOfIdeal: Object.fromEntries(coverage.shortOfIdeal) }, null, 1));
    // The generator reaches each regime: a head holding everything, a walk, concurrent claims.
    expect(coverage.comparedToIdeal).toBeGreaterThan(0);
    expect(coverage.walked).toBeGreaterThan(0);
    expect(coverage.concurrentRounds).toBeGreaterThan(0);
  });
});
