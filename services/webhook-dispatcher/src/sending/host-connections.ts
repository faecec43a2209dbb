/**
 * The connections this process may hold to one receiver host at once, shared fairly between the tenants (orgs)
 * sending there. Node's agent hands a free connection to whichever request queued first, so on a host that many
 * orgs' endpoints share (a receiving SaaS), orgs whose receivers answer slowly kept their attempts on the connections
 * and every other org's attempts waited behind them. Here a connection that comes free goes to the waiting tenant
 * that holds the fewest connections to that host (the one waiting longest among equals), and within a tenant to its
 * oldest waiting attempt: a slow tenant's share shrinks as others need connections, to an equal split of the host.
 */
export class HostConnections {
  private readonly hosts = new Map<string, HostState>();

  constructor(private readonly perHost: number) {}

  /**
   * A connection to `host` for `tenant`: `granted` resolves when one is free, or rejects with the reason given to
   * `cancel` (a timeout, a shutdown) while it still waits. `release` gives it back; it must be called once `granted`
   * resolved, and is a no-op otherwise.
   */
  acquire(host: string, tenant: string): HostConnection {
    const state = this.hosts.get(host) ?? this.newHost(host);
    let waiter: Waiter | undefined;
    let holding = false;
    let released = false;
    const granted = new Promise<void>((resolve, reject) => {
      if (state.total < this.perHost) {
        take(state, tenant);
        holding = true;
        resolve();
        return;
      }
      waiter = {
        tenant,
        since: state.sequence++,
        grant: () => {
          holding = true;
          resolve();
        },
        reject,
      };
      const queue = state.waiting.get(tenant);
      if (queue) queue.push(waiter);
      else state.waiting.set(tenant, [waiter]);
    });
    return {
      granted,
      cancel: (reason) => {
        if (holding || !waiter) return;
        const queue = state.waiting.get(tenant);
        const index = queue?.indexOf(waiter) ?? -1;
        if (index === -1) return;
        queue!.splice(index, 1);
        if (queue!.length === 0) state.waiting.delete(tenant);
        waiter.reject(reason);
        this.forgetIfIdle(host, state);
      },
      release: () => {
        if (!holding || released) return;
        released = true;
        give(state, tenant);
        const next = nextWaiter(state);
        if (next) {
          take(state, next.tenant);
          next.grant();
        }
        this.forgetIfIdle(host, state);
      },
    };
  }

  /** Connections held to `host` per tenant (for tests and diagnostics). */
  heldBy(host: string): Record<string, number> {
    return Object.fromEntries(this.hosts.get(host)?.held ?? []);
  }

  private newHost(host: string): HostState {
    const state: HostState = { total: 0, held: new Map(), waiting: new Map(), sequence: 0 };
    this.hosts.set(host, state);
    return state;
  }

  private forgetIfIdle(host: string, state: HostState): void {
    if (state.total === 0 && state.waiting.size === 0) this.hosts.delete(host);
  }
}

export interface HostConnection {
  granted: Promise<void>;
  cancel(reason: unknown): void;
  release(): void;
}

interface Waiter {
  tenant: string;
  /** Order of arrival on this host, to break ties between tenants holding as many connections. */
  since: number;
  grant(): void;
  reject(reason: unknown): void;
}

interface HostState {
  total: number;
  held: Map<string, number>;
  /** Per tenant, its waiting attempts oldest first; tenants without waiters have no entry. */
  waiting: Map<string, Waiter[]>;
  sequence: number;
}

function take(state: HostState, tenant: string): void {
  state.total += 1;
  state.held.set(tenant, (state.held.get(tenant) ?? 0) + 1);
}

function give(state: HostState, tenant: string): void {
  state.total -= 1;
  const held = (state.held.get(tenant) ?? 1) - 1;
  if (held === 0) state.held.delete(tenant);
  else state.held.set(tenant, held);
}

/** The oldest waiter of the waiting tenant holding the fewest connections (the longest waiting among equals). */
function nextWaiter(state: HostState): Waiter | undefined {
  let best: Waiter[] | undefined;
  let bestHeld = Infinity;
  for (const [tenant, queue] of state.waiting) {
    const held = state.held.get(tenant) ?? 0;
    if (held < bestHeld || (held === bestHeld && queue[0]!.since < best![0]!.since)) {
      best = queue;
      bestHeld = held;
    }
  }
  if (!best) return undefined;
  const next = best.shift()!;
  if (best.length === 0) state.waiting.delete(next.tenant);
  return next;
}
