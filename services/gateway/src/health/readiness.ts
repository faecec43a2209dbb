import { loadRpcTransport, RpcHealthProbe } from "@renderbus/rpc";
import type { GatewayDeps } from "../deps.js";

/** How long one readiness answer is reused: probes every few seconds see fresh news, a flood costs nothing. */
export const READINESS_CACHE_MS = 1000;

/** Whether each dependency answers. */
export interface ReadinessChecks {
  auth: boolean;
  jobs: boolean;
  webhooks: boolean;
  nats: boolean;
  redis: boolean;
  /** READYZ_HTTP_DEPENDENCIES all answer 2xx (true when none are configured). */
  http: boolean;
}

/** How long one extra HTTP readiness check may take. */
const HTTP_CHECK_TIMEOUT_MS = 1000;

/**
 * The gateway's readiness: its gRPC services answer their health checks (each over one long-lived channel), NATS is
 * connected and Redis is ready. `/readyz` is public, so the answer is cached for {@link READINESS_CACHE_MS} and
 * concurrent callers share one check in flight: however many requests arrive, the dependencies see at most one
 * round of checks per second from this replica (SECURITY-AUDIT finding 13).
 */
export class Readiness {
  private readonly probes: { auth: RpcHealthProbe; jobs: RpcHealthProbe; webhooks: RpcHealthProbe };
  private cached: { checks: Promise<ReadinessChecks>; at: number } | undefined;

  constructor(
    private readonly deps: Pick<GatewayDeps, "config" | "bus" | "redis">,
    private readonly now: () => number = Date.now,
  ) {
    const { AUTH_GRPC_ADDRESS, JOBS_GRPC_ADDRESS, WEBHOOKS_GRPC_ADDRESS } = deps.config;
    // Channels open on the first check (an app built for a test that never asks opens none), over the transport of the
    // gateway's own calls: with RPC_TRANSPORT=tls the services answer health checks to a client certificate only.
    const transport = loadRpcTransport(deps.config);
    this.probes = { auth: new RpcHealthProbe(AUTH_GRPC_ADDRESS, transport), jobs: new RpcHealthProbe(JOBS_GRPC_ADDRESS, transport), webhooks: new RpcHealthProbe(WEBHOOKS_GRPC_ADDRESS, transport) };
  }

  /** The checks, from the last second's round or a new one. */
  check(): Promise<ReadinessChecks> {
    const now = this.now();
    if (this.cached && now - this.cached.at < READINESS_CACHE_MS) return this.cached.checks;
    const checks = this.run();
    this.cached = { checks, at: now };
    return checks;
  }

  close(): void {
    for (const probe of Object.values(this.probes)) probe.close();
  }

  private async run(): Promise<ReadinessChecks> {
    const [auth, jobs, webhooks, http] = await Promise.all([
      this.probes.auth.isServing(),
      this.probes.jobs.isServing(),
      this.probes.webhooks.isServing(),
      allAnswer(this.deps.config.READYZ_HTTP_DEPENDENCIES),
    ]);
    const { nc } = this.deps.bus;
    return { auth, jobs, webhooks, http, nats: !nc.isClosed() && !nc.isDraining(), redis: this.deps.redis.status === "ready" };
  }
}

async function allAnswer(urls: readonly string[]): Promise<boolean> {
  const answers = await Promise.all(
    urls.map(async (url) => {
      try {
        const response = await fetch(url, { signal: AbortSignal.timeout(HTTP_CHECK_TIMEOUT_MS), redirect: "manual" });
        await response.body?.cancel();
        return response.ok;
      } catch {
        return false;
      }
    }),
  );
  return answers.every(Boolean);
}
