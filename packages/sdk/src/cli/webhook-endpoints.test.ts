import { Command } from "commander";
import { describe, expect, it } from "vitest";
import type { Endpoint } from "../types.js";
import { UsageError } from "./exit-codes.js";
import { buildProgram } from "./program.js";
import { endpointLines, endpointsTable, parseEvents, parseInstant } from "./webhook-endpoints.js";

const endpoint: Endpoint = {
  id: "ep_1",
  url: "https://hooks.example.com/a",
  description: "alerts",
  events: ["job.failed", "endpoint.disabled"],
  enabled: false,
  disabledReason: "failing",
  disabledAt: Date.UTC(2026, 0, 2, 3, 4, 5),
  ordering: "fifo",
  rateLimitPerSecond: 5,
  retrySchedule: "seed",
  secretSet: true,
  previousSecretExpiresAt: null,
  recentDeliveries: null,
  createdAt: Date.UTC(2026, 0, 1),
};

/** Runs the real command tree without touching the network: every case here fails before a request is made. */
async function parse(...args: string[]): Promise<unknown> {
  const program = buildProgram();
  const silence = (command: Command) => {
    command.configureOutput({ writeOut: () => undefined, writeErr: () => undefined });
    command.commands.forEach(silence);
  };
  silence(program);
  try {
    await program.parseAsync(["node", "renderbus", "--api-key", "rb_unit", "--base-url", "http://127.0.0.1:1", ...args]);
    return undefined;
  } catch (error) {
    return error;
  }
}

describe("renderbus webhooks endpoints", () => {
  it("parses --events into known, deduplicated names and rejects anything else", () => {
    expect(parseEvents("job.completed, job.failed,job.completed")).toEqual(["job.completed", "job.failed"]);
    expect(parseEvents("*")).toEqual(["*"]);
    expect(() => parseEvents("")).toThrow(UsageError);
    expect(() => parseEvents("job.completed,job.exploded")).toThrow(/unknown event "job.exploded"/);
    expect(() => parseEvents("x".repeat(10_000))).toThrow(UsageError);
  });

  it("parses --since/--until as ISO-8601, epoch milliseconds or a duration ago", () => {
    const now = Date.UTC(2026, 5, 1, 12);
    expect(parseInstant("2026-06-01T10:00:00Z", now)).toBe(Date.UTC(2026, 5, 1, 10));
    expect(parseInstant("1780000000000", now)).toBe(1_780_000_000_000);
    expect(parseInstant("24h", now)).toBe(now - 86_400_000);
    expect(parseInstant("30m", now)).toBe(now - 1_800_000);
    expect(parseInstant("7d", now)).toBe(now - 7 * 86_400_000);
    for (const bad of ["yesterday", "", "-5h", "2026-13-45", "1e3", "9".repeat(30)]) expect(() => parseInstant(bad, now), bad).toThrow();
  });

  it("shows the state and why an endpoint is disabled, never a secret", () => {
    const listed = endpointsTable([endpoint, { ...endpoint, id: "ep_2", enabled: true, disabledReason: null, events: ["*"], rateLimitPerSecond: null, ordering: "none" }]);
    expect(listed).toMatch(/ep_1\s+disabled \(failing\)\s+job\.failed,endpoint\.disabled\s+fifo\s+5\/s\s+https:\/\/hooks\.example\.com\/a/);
    expect(listed).toMatch(/ep_2\s+enabled\s+\*\s+none\s+-/);
    expect(endpointsTable([])).toBe("No endpoints.");
    const shown = endpointLines(endpoint);
    expect(shown).toContain("disabled     2026-01-02 03:04:05Z (failing)");
    expect(shown).not.toMatch(/secret/i);
  });

  it("reports bad command lines as usage errors before any request", async () => {
    expect(await parse("webhooks", "endpoints", "update", "ep_1", "--enable", "--disable")).toBeInstanceOf(UsageError);
    expect(await parse("webhooks", "endpoints", "update", "ep_1")).toBeInstanceOf(UsageError);
    expect(await parse("webhooks", "endpoints", "update", "ep_1", "--events", "nope")).toBeInstanceOf(UsageError);
    expect(await parse("webhooks", "endpoints", "recover", "ep_1", "--since", "2h", "--until", "3h")).toBeInstanceOf(UsageError);
    expect(await parse("webhooks", "endpoints", "recover", "ep_1")).toMatchObject({ code: "commander.missingMandatoryOptionValue" });
    expect(await parse("webhooks", "endpoints", "create", "ftp://example.com/x")).toMatchObject({ code: "commander.invalidArgument" });
    expect(await parse("webhooks", "endpoints", "create", "https://example.com/x", "--ordering", "lifo")).toMatchObject({ code: "commander.invalidArgument" });
    expect(await parse("webhooks", "endpoints", "rotate", "ep_1", "--grace", "-1")).toMatchObject({ code: "commander.invalidArgument" });
  });
});
