import { type Command, InvalidArgumentError, Option } from "commander";
import type { RenderbusClient } from "../client.js";
import type { CreatedEndpoint, Endpoint, EndpointSettings } from "../types.js";
import { UsageError } from "./exit-codes.js";
import { formatTime, printJson, table, type Output } from "./output.js";

/** What `renderbus webhooks endpoints ...` needs from the program: its client and output for a command. */
export interface EndpointCommandContext {
  clientOf(command: Command): RenderbusClient;
  outputOf(command: Command): Output;
}

/** The events an endpoint can subscribe to (docs/webhooks.md, "Endpoints"); the API checks again, this gives a usage error. */
export const ENDPOINT_EVENTS = ["*", "job.running", "job.completed", "job.failed", "batch.completed", "endpoint.disabled"] as const;

/** `--events job.completed,job.failed` (or `*`) as a list of event names. @throws UsageError on a malformed name. */
export function parseEvents(value: string): string[] {
  const events = [...new Set(value.split(",").map((event) => event.trim()).filter(Boolean))];
  if (events.length === 0) throw new UsageError("--events needs at least one event name, or *");
  for (const event of events) {
    if (!(ENDPOINT_EVENTS as readonly string[]).includes(event)) throw new UsageError(`--events: unknown event ${JSON.stringify(event.slice(0, 80))}; one of ${ENDPOINT_EVENTS.join(", ")}`);
  }
  return events;
}

/**
 * A point in time for `--since` / `--until`: an ISO-8601 date or date-time, epoch milliseconds, or a duration ago
 * (`30m`, `24h`, `7d`). Returns epoch milliseconds. @throws InvalidArgumentError when it is none of these.
 */
export function parseInstant(value: string, now = Date.now()): number {
  const text = value.trim();
  const ago = /^(\d{1,6})([smhd])$/.exec(text);
  if (ago) return now - Number(ago[1]) * { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[ago[2] as "s" | "m" | "h" | "d"];
  if (/^\d{1,15}$/.test(text)) return Number(text);
  const parsed = /^\d{4}-\d{2}-\d{2}/.test(text) ? Date.parse(text) : Number.NaN;
  if (!Number.isFinite(parsed)) throw new InvalidArgumentError("Not a time: use ISO-8601, epoch milliseconds, or a duration ago like 24h.");
  return parsed;
}

function positiveInteger(value: string): number {
  const number = Number(value);
  if (!Number.isInteger(number) || number <= 0) throw new InvalidArgumentError("Not a positive integer.");
  return number;
}

function nonNegativeInteger(value: string): number {
  const number = Number(value);
  if (!Number.isInteger(number) || number < 0) throw new InvalidArgumentError("Not a non-negative integer.");
  return number;
}

function checkUrl(value: string): string {
  try {
    const url = new URL(value);
    if (url.protocol !== "https:" && url.protocol !== "http:") throw new Error("scheme");
  } catch {
    throw new InvalidArgumentError("Not an http(s) URL.");
  }
  return value;
}

/** One line per endpoint: id, state (and why it is disabled), events, ordering, URL. */
export function endpointsTable(endpoints: Endpoint[]): string {
  if (endpoints.length === 0) return "No endpoints.";
  return table([
    ["ID", "STATE", "EVENTS", "ORDERING", "RATE", "URL"],
    ...endpoints.map((endpoint) => [
      endpoint.id,
      endpoint.enabled ? "enabled" : `disabled${endpoint.disabledReason ? ` (${endpoint.disabledReason})` : ""}`,
      endpoint.events.join(","),
      endpoint.ordering,
      endpoint.rateLimitPerSecond === null ? "-" : `${endpoint.rateLimitPerSecond}/s`,
      endpoint.url,
    ]),
  ]);
}

export function endpointLines(endpoint: Endpoint): string {
  return [
    `${endpoint.id}  ${endpoint.enabled ? "enabled" : "disabled"}  ${endpoint.url}`,
    endpoint.description ? `  description  ${endpoint.description}` : undefined,
    `  events       ${endpoint.events.join(", ")}`,
    `  ordering     ${endpoint.ordering}, retries ${endpoint.retrySchedule}, rate ${endpoint.rateLimitPerSecond === null ? "unlimited" : `${endpoint.rateLimitPerSecond}/s`}`,
    endpoint.enabled ? undefined : `  disabled     ${formatTime(endpoint.disabledAt)}${endpoint.disabledReason ? ` (${endpoint.disabledReason})` : ""}`,
    endpoint.previousSecretExpiresAt ? `  old secret   valid until ${formatTime(endpoint.previousSecretExpiresAt)}` : undefined,
    `  created      ${formatTime(endpoint.createdAt)}`,
  ]
    .filter((line): line is string => line !== undefined)
    .join("\n");
}

function secretShownOnce(endpoint: CreatedEndpoint): string {
  return `\n  ${endpoint.secret}\n\nStore the signing secret now: it is not shown again.`;
}

/** The settings options shared by create and update. */
function settingsOf(options: Record<string, unknown>): EndpointSettings {
  return {
    ...(options.description !== undefined ? { description: String(options.description) } : {}),
    ...(options.events !== undefined ? { events: options.events as string[] } : {}),
    ...(options.ordering !== undefined ? { ordering: options.ordering as "none" | "fifo" } : {}),
    ...(options.retrySchedule !== undefined ? { retrySchedule: options.retrySchedule as "seed" | "extended" } : {}),
  };
}

function withSettingsOptions(command: Command): Command {
  return command
    .option("--description <text>", "a note for you")
    .option("--events <list>", "comma-separated event names to deliver, or * for all", parseEvents)
    .addOption(new Option("--ordering <ordering>", "fifo: one delivery at a time, in commit order").choices(["none", "fifo"]))
    .addOption(new Option("--retry-schedule <schedule>", "retry schedule").choices(["seed", "extended"]));
}

/** Adds `endpoints list|get|create|update|delete|rotate|recover` under `renderbus webhooks`. */
export function registerEndpointCommands(webhooks: Command, context: EndpointCommandContext): void {
  const { clientOf, outputOf } = context;
  const endpoints = webhooks.command("endpoints").description("Manage webhook endpoints (docs/webhooks.md, \"Endpoints\")");

  endpoints
    .command("list")
    .description("List the org's endpoints with their state")
    .action(async (_options, command: Command) => {
      const output = outputOf(command);
      const found = await clientOf(command).webhooks.endpoints.list();
      if (output.json) printJson(output, found);
      else output.out(endpointsTable(found));
    });

  endpoints
    .command("get")
    .description("Show one endpoint")
    .argument("<endpointId>")
    .action(async (endpointId: string, _options, command: Command) => {
      const output = outputOf(command);
      const endpoint = await clientOf(command).webhooks.endpoints.get(endpointId);
      if (output.json) printJson(output, endpoint);
      else output.out(endpointLines(endpoint));
    });

  withSettingsOptions(
    endpoints
      .command("create")
      .description("Create an endpoint; its signing secret (generated unless --secret) is shown only once")
      .argument("<url>", "http(s) URL that receives the deliveries", checkUrl),
  )
    .option("--secret <secret>", "your own signing secret (default: a generated whsec_ secret)")
    .option("--rate-limit <perSecond>", "at most this many deliveries per second", positiveInteger)
    .option("--disabled", "create it disabled")
    .action(async (url: string, options, command: Command) => {
      const output = outputOf(command);
      const created = await clientOf(command).webhooks.endpoints.create({
        url,
        ...settingsOf(options),
        ...(options.secret !== undefined ? { secret: String(options.secret) } : {}),
        ...(options.rateLimit !== undefined ? { rateLimitPerSecond: options.rateLimit as number } : {}),
        ...(options.disabled ? { enabled: false } : {}),
      });
      if (output.json) printJson(output, created);
      else output.out(`Created ${created.id} for ${created.url}\n${secretShownOnce(created)}`);
    });

  withSettingsOptions(endpoints.command("update").description("Change an endpoint; --enable re-enables a disabled one").argument("<endpointId>"))
    .option("--url <url>", "new URL", checkUrl)
    .option("--rate-limit <perSecond>", "at most this many deliveries per second", positiveInteger)
    .option("--no-rate-limit", "remove the rate limit")
    .option("--enable", "enable the endpoint")
    .option("--disable", "disable the endpoint (its deliveries are stored as skipped)")
    .action(async (endpointId: string, options, command: Command) => {
      if (options.enable && options.disable) throw new UsageError("--enable and --disable exclude each other");
      const params = {
        ...settingsOf(options),
        ...(options.url !== undefined ? { url: String(options.url) } : {}),
        // Commander sets rateLimit to false for --no-rate-limit and leaves it undefined when neither is given.
        ...(options.rateLimit === false ? { rateLimitPerSecond: null } : typeof options.rateLimit === "number" ? { rateLimitPerSecond: options.rateLimit } : {}),
        ...(options.enable ? { enabled: true } : options.disable ? { enabled: false } : {}),
      };
      if (Object.keys(params).length === 0) throw new UsageError("Nothing to update: give at least one option");
      const output = outputOf(command);
      const endpoint = await clientOf(command).webhooks.endpoints.update(endpointId, params);
      if (output.json) printJson(output, endpoint);
      else output.out(`Updated ${endpoint.id}\n${endpointLines(endpoint)}`);
    });

  endpoints
    .command("delete")
    .description("Delete an endpoint")
    .argument("<endpointId>")
    .action(async (endpointId: string, _options, command: Command) => {
      const output = outputOf(command);
      const deleted = await clientOf(command).webhooks.endpoints.delete(endpointId);
      if (output.json) printJson(output, deleted);
      else output.out(`Deleted ${deleted.id}`);
    });

  endpoints
    .command("rotate")
    .description("Rotate the signing secret; the old one still signs for the grace period. The new one is shown only once")
    .argument("<endpointId>")
    .option("--secret <secret>", "your own new secret (default: a generated whsec_ secret)")
    .option("--grace <seconds>", "how long the old secret keeps signing (default 86400)", nonNegativeInteger)
    .action(async (endpointId: string, options, command: Command) => {
      const output = outputOf(command);
      const rotated = await clientOf(command).webhooks.endpoints.rotateSecret(endpointId, {
        ...(options.secret !== undefined ? { secret: String(options.secret) } : {}),
        ...(options.grace !== undefined ? { graceSeconds: options.grace as number } : {}),
      });
      if (output.json) printJson(output, rotated);
      else output.out(`Rotated the secret of ${rotated.id}; the old one signs until ${formatTime(rotated.previousSecretExpiresAt)}\n${secretShownOnce(rotated)}`);
    });

  endpoints
    .command("recover")
    .description("Send again every failed or skipped delivery of an endpoint created in a window")
    .argument("<endpointId>")
    .requiredOption("--since <time>", "start of the window: ISO-8601, epoch ms, or a duration ago like 24h", (value) => parseInstant(value))
    .option("--until <time>", "end of the window (default: now)", (value) => parseInstant(value))
    .action(async (endpointId: string, options, command: Command) => {
      const since = options.since as number;
      const until = options.until as number | undefined;
      if (until !== undefined && until <= since) throw new UsageError("--until must be after --since");
      const output = outputOf(command);
      const recovered = await clientOf(command).webhooks.endpoints.recover(endpointId, { since, ...(until !== undefined ? { until } : {}) });
      if (output.json) printJson(output, recovered);
      else output.out(`Recovering ${recovered.count} ${recovered.count === 1 ? "delivery" : "deliveries"} of ${endpointId}`);
    });
}
