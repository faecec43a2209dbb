import perfHooks from "node:perf_hooks";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createMetricsRegistry } from "./metrics.js";

afterEach(() => {
  vi.restoreAllMocks();
});

describe("a service's metrics registry", () => {
  it("samples the event loop's delay ten times a second, not prom-client's default hundred (a timer wake-up each, paid idle)", async () => {
    const monitor = vi.spyOn(perfHooks, "monitorEventLoopDelay");
    const registry = createMetricsRegistry("jobs");
    expect(monitor).toHaveBeenCalledWith(expect.objectContaining({ resolution: 100 }));
    // Still reported, with the service label.
    expect(await registry.metrics()).toMatch(/nodejs_eventloop_lag_p99_seconds\{service="jobs"\}/);
  });
});
