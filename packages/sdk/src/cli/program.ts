import { createReadStream, readFileSync, statSync } from "node:fs";
import { basename } from "node:path";
import { createInterface } from "node:readline/promises";
import { Command, InvalidArgumentError, Option } from "commander";
import { RenderbusClient } from "../client.js";
import { JOB_STATUSES, type JobSpec, type JobStatus } from "../types.js";
import { configPath, DEFAULT_BASE_URL, readConfig, writeConfig } from "./config.js";
import { EXIT, ExitError, UsageError } from "./exit-codes.js";
import { batchLines, batchesTable, deliveriesTable, deliveryLines, jobLines, jobsTable, printJson, processOutput, table, formatTime, type Output } from "./output.js";
import { JobProgress, UploadProgress } from "./progress.js";
import { registerEndpointCommands } from "./webhook-endpoints.js";
import { listenAndForward, newListenSecret } from "./webhooks-listen.js";

interface GlobalOptions {
  apiKey?: string;
  baseUrl?: string;
  json?: boolean;
}

const DELIVERY_EVENTS = ["job.running", "job.completed", "job.failed", "batch.completed", "webhook.test", "endpoint.disabled", "job.progress"];

/** Uploads a local file with a progress bar and returns the upload's id. @throws UsageError when it is not a readable file. */
async function uploadLocalFile(client: RenderbusClient, output: Output, path: string): Promise<string> {
  let size: number;
  try {
    const stats = statSync(path);
    if (!stats.isFile()) throw new Error("not a file");
    size = stats.size;
  } catch {
    throw new UsageError(`--file: ${path} is not a readable file`);
  }
  const progress = new UploadProgress(output, basename(path));
  try {
    const upload = await client.uploads.upload(createReadStream(path), { filename: basename(path), size, onProgress: (sent, total) => progress.update(sent, total) });
    progress.stop();
    if (!output.json) output.err(`Uploaded ${basename(path)} as ${upload.id}`);
    return upload.id;
  } catch (error) {
    progress.stop();
    throw error;
  }
}

/** The `renderbus` command tree. `main.ts` runs it and turns errors into exit codes. */
export function buildProgram(): Command {
  const program = new Command("renderbus")
    .description("Command line for the Renderbus media job API")
    .version("0.1.0")
    .option("--api-key <key>", "API key (default: $RENDERBUS_API_KEY, then the saved login)")
    .option("--base-url <url>", "API URL (default: $RENDERBUS_BASE_URL, then the saved login)")
    .option("--json", "machine-readable JSON output")
    .showHelpAfterError()
    // Commander errors become exceptions (set before subcommands are added so they inherit it): main maps them to exit 2.
    .exitOverride()
    .addHelpText("after", "\nExit codes: 0 ok, 1 API error, 2 usage, 3 job failed/cancelled, 4 auth, 5 API unreachable, 6 timed out.");

  const globals = (command: Command) => command.optsWithGlobals<GlobalOptions>();
  const outputOf = (command: Command) => processOutput(Boolean(globals(command).json));
  const clientOf = (command: Command) => {
    const options = globals(command);
    const config = readConfig();
    const apiKey = options.apiKey ?? process.env.RENDERBUS_API_KEY ?? config.apiKey;
    if (!apiKey) throw new ExitError(EXIT.AUTH, "Not logged in: run `renderbus login`, or set RENDERBUS_API_KEY");
    return new RenderbusClient({ apiKey, baseUrl: baseUrlOf(options), userAgent: "renderbus-cli/0.1.0" });
  };

  program
    .command("login")
    .description("Check an API key and save it with the API URL (mode 0600)")
    .action(async (_options, command: Command) => {
      const options = globals(command);
      const output = outputOf(command);
      const apiKey = (options.apiKey ?? process.env.RENDERBUS_API_KEY ?? (await readKey())).trim();
      if (!apiKey) throw new UsageError("No API key given");
      const baseUrl = baseUrlOf(options);
      const me = await new RenderbusClient({ apiKey, baseUrl }).me();
      const path = configPath();
      writeConfig({ ...readConfig(path), apiKey, baseUrl }, path);
      if (output.json) printJson(output, { orgId: me.orgId, plan: me.plan, baseUrl, config: path });
      else output.out(`Logged in to ${me.orgId} (plan ${me.plan}) at ${baseUrl}. Saved to ${path}`);
    });

  const jobs = program.command("jobs").description("Submit, list, inspect, cancel and watch jobs");
  jobs
    .command("submit")
    .description("Submit a job, e.g. `renderbus jobs submit thumbnail --input source=https://... --param timestamp=1 --wait` or `renderbus jobs submit transcode --file ./clip.mp4 --wait`")
    .argument("<type>", "job type (see GET /job-types)")
    .option("-i, --input <name=url>", "an input URL or upload id (repeatable)", collect, [])
    .option("-f, --file <[name=]path>", "upload a local file (resumable, with a progress bar) and use it as an input, `source` unless named (repeatable)", collect, [])
    .option("-p, --param <key=value>", "a parameter; the value is parsed as JSON when it can be (repeatable)", collect, [])
    .option("--params <json>", "all parameters as a JSON object")
    .option("--metadata <json>", "your own data as a JSON object")
    .option("--idempotency-key <key>", "reuse to make a retried submission safe")
    .option("-w, --wait", "show live progress and wait until the job finishes")
    .option("--timeout <seconds>", "with --wait: give up after this long", positiveNumber, 600)
    .action(async (type: string, options, command: Command) => {
      const output = outputOf(command);
      const client = clientOf(command);
      const uploaded: Record<string, string> = {};
      for (const file of options.file as string[]) {
        const [name, path] = /^[a-z][a-z0-9_]*=/i.test(file) ? splitPair(file, "--file") : ["source", file];
        uploaded[name] = await uploadLocalFile(client, output, path);
      }
      const spec: JobSpec = {
        type,
        inputs: { ...Object.fromEntries(options.input.map((pair: string) => splitPair(pair, "--input"))), ...uploaded },
        params: { ...(options.params ? jsonObject(options.params, "--params") : {}), ...Object.fromEntries(options.param.map((pair: string) => parseParam(pair))) },
        ...(options.metadata ? { metadata: jsonObject(options.metadata, "--metadata") } : {}),
      };
      const job = await client.jobs.submit(spec, options.idempotencyKey ? { idempotencyKey: options.idempotencyKey } : {});
      if (!options.wait) {
        if (output.json) printJson(output, job);
        else output.out(`Submitted ${job.id} (${job.type}), status ${job.status}`);
        return;
      }
      if (!output.json) output.err(`Submitted ${job.id} (${job.type})`);
      await watch(client, output, job.id, options.timeout);
    });
  jobs
    .command("list")
    .description("List jobs, newest first")
    .addOption(new Option("--status <status>").choices(JOB_STATUSES))
    .option("--type <type>")
    .option("--batch <batchId>")
    .option("-n, --limit <count>", "how many to show", positiveNumber, 20)
    .option("--all", "every matching job (follows all pages)")
    .action(async (options, command: Command) => {
      const output = outputOf(command);
      const list = clientOf(command).jobs.list({
        ...(options.status ? { status: options.status as JobStatus } : {}),
        ...(options.type ? { type: options.type } : {}),
        ...(options.batch ? { batchId: options.batch } : {}),
        limit: Math.min(100, options.all ? 100 : options.limit),
      });
      const found = await list.toArray(options.all ? Infinity : options.limit);
      if (output.json) printJson(output, found);
      else output.out(jobsTable(found));
    });
  jobs
    .command("get")
    .description("Show a job")
    .argument("<jobId>")
    .action(async (jobId: string, _options, command: Command) => {
      const output = outputOf(command);
      const job = await clientOf(command).jobs.get(jobId);
      if (output.json) printJson(output, job);
      else output.out(jobLines(job));
    });
  jobs
    .command("cancel")
    .description("Cancel a waiting, dispatched or running job")
    .argument("<jobId>")
    .action(async (jobId: string, _options, command: Command) => {
      const output = outputOf(command);
      const job = await clientOf(command).jobs.cancel(jobId);
      if (output.json) printJson(output, job);
      else output.out(`Cancelled ${job.id} (status ${job.status})`);
    });
  jobs
    .command("watch")
    .description("Show live progress of a job until it finishes (exit 3 when it fails or is cancelled)")
    .argument("<jobId>")
    .option("--timeout <seconds>", "give up after this long", positiveNumber, 600)
    .action(async (jobId: string, options, command: Command) => {
      await watch(clientOf(command), outputOf(command), jobId, options.timeout);
    });

  const batches = program.command("batches").description("Submit and inspect batches");
  batches
    .command("submit")
    .description("Submit a batch from a JSON file: an array of jobs or {\"jobs\": [...]} ('-' reads stdin)")
    .requiredOption("-f, --file <path>", "JSON file with the jobs")
    .option("--idempotency-key <key>", "reuse to make a retried submission safe")
    .action(async (options, command: Command) => {
      const output = outputOf(command);
      const parsed = parseJson(readFileSync(options.file === "-" ? 0 : options.file, "utf8"), "--file") as JobSpec[] | { jobs?: JobSpec[] };
      const specs = Array.isArray(parsed) ? parsed : parsed.jobs;
      if (!Array.isArray(specs) || specs.length === 0) throw new UsageError("--file must hold a non-empty array of jobs or {\"jobs\": [...]}");
      const batch = await clientOf(command).batches.submit(specs, options.idempotencyKey ? { idempotencyKey: options.idempotencyKey } : {});
      if (output.json) printJson(output, batch);
      else output.out(batchLines(batch));
    });
  batches
    .command("list")
    .description("List batches, newest first")
    .option("--status <status>", "running or completed")
    .option("-n, --limit <count>", "how many to show", positiveNumber, 20)
    .action(async (options, command: Command) => {
      const output = outputOf(command);
      const list = clientOf(command).batches.list({ ...(options.status ? { status: options.status } : {}), limit: Math.min(100, options.limit) });
      const found = await list.toArray(options.limit);
      if (output.json) printJson(output, found);
      else output.out(batchesTable(found));
    });
  batches
    .command("get")
    .description("Show a batch with counts per status")
    .argument("<batchId>")
    .action(async (batchId: string, _options, command: Command) => {
      const output = outputOf(command);
      const batch = await clientOf(command).batches.get(batchId);
      if (output.json) printJson(output, batch);
      else output.out(batchLines(batch));
    });

  const keys = program.command("keys").description("Manage the org's API keys");
  keys
    .command("create")
    .description("Create an API key (the key is shown only once)")
    .argument("<name>")
    .action(async (name: string, _options, command: Command) => {
      const output = outputOf(command);
      const key = await clientOf(command).apiKeys.create(name);
      if (output.json) printJson(output, key);
      else output.out(`Created ${key.id} "${key.name}"\n\n  ${key.key}\n\nStore it now: it is not shown again.`);
    });
  keys
    .command("list")
    .description("List API keys (without secrets)")
    .action(async (_options, command: Command) => {
      const output = outputOf(command);
      const found = await clientOf(command).apiKeys.list();
      if (output.json) printJson(output, found);
      else if (found.length === 0) output.out("No keys.");
      else output.out(table([["ID", "NAME", "START", "CREATED", "LAST USED", "REVOKED"], ...found.map((key) => [key.id, key.name, key.start, formatTime(key.createdAt), formatTime(key.lastUsedAt), formatTime(key.revokedAt)])]));
    });
  keys
    .command("revoke")
    .description("Revoke an API key at once")
    .argument("<keyId>")
    .action(async (keyId: string, _options, command: Command) => {
      const output = outputOf(command);
      const key = await clientOf(command).apiKeys.revoke(keyId);
      if (output.json) printJson(output, key);
      else output.out(`Revoked ${key.id} "${key.name}"`);
    });

  const webhooks = program.command("webhooks").description("Receive, inspect, retry and test webhooks");
  webhooks
    .command("listen")
    .description("Forward the org's webhooks, signed with a local secret, to a local URL (like `stripe listen`)")
    .requiredOption("--forward-to <url>", "local URL to POST each webhook to, e.g. http://localhost:4000/hook")
    .option("--secret <secret>", "local signing secret (default: a saved one, generated on first use)")
    .option("--events <list>", "comma-separated events to forward (default: all)")
    .option("--brand <brand>", "header brand, X-<brand>-Signature", "Renderbus")
    .action(async (options, command: Command) => {
      const output = outputOf(command);
      const client = clientOf(command);
      try {
        new URL(options.forwardTo);
      } catch {
        throw new UsageError(`--forward-to is not a URL: ${options.forwardTo}`);
      }
      const secret = options.secret ?? savedListenSecret();
      const controller = new AbortController();
      const stop = () => controller.abort();
      process.once("SIGINT", stop);
      process.once("SIGTERM", stop);
      try {
        await listenAndForward(client, output, {
          forwardTo: options.forwardTo,
          secret,
          events: options.events ? String(options.events).split(",").map((event) => event.trim()).filter(Boolean) : [],
          brand: options.brand,
          signal: controller.signal,
        });
      } finally {
        process.off("SIGINT", stop);
        process.off("SIGTERM", stop);
      }
    });
  webhooks
    .command("deliveries")
    .description("The delivery log, newest first; with an id argument, one delivery with its attempts")
    .argument("[deliveryId]")
    .addOption(new Option("--status <status>").choices(["pending", "succeeded", "failed"]))
    .addOption(new Option("--event <event>").choices(DELIVERY_EVENTS))
    .option("--job <jobId>")
    .option("-n, --limit <count>", "how many to show", positiveNumber, 20)
    .action(async (deliveryId: string | undefined, options, command: Command) => {
      const output = outputOf(command);
      const client = clientOf(command);
      const found = await client.webhooks
        .deliveries({ ...(options.status ? { status: options.status } : {}), ...(options.event ? { event: options.event } : {}), ...(options.job ? { jobId: options.job } : {}), limit: Math.min(100, options.limit) })
        .toArray(deliveryId ? Infinity : options.limit);
      if (deliveryId) {
        const delivery = found.find((candidate) => candidate.id === deliveryId);
        if (!delivery) throw new ExitError(EXIT.API_ERROR, `NOT_FOUND: Delivery ${deliveryId} not found`);
        if (output.json) printJson(output, delivery);
        else output.out(deliveryLines(delivery));
        return;
      }
      if (output.json) printJson(output, found);
      else output.out(deliveriesTable(found));
    });
  webhooks
    .command("retry")
    .description("Send a delivery again (a new attempt chain with the same delivery id)")
    .argument("<deliveryId>")
    .action(async (deliveryId: string, _options, command: Command) => {
      const output = outputOf(command);
      const delivery = await clientOf(command).webhooks.retry(deliveryId);
      if (output.json) printJson(output, delivery);
      else output.out(`Retrying ${delivery.id} (${delivery.event}), status ${delivery.status}`);
    });
  webhooks
    .command("test")
    .description("Send a signed webhook.test event to the configured URL, or to --endpoint (exit 3 unless it answers 2xx)")
    .option("--endpoint <endpointId>", "the endpoint to test (default: the org's webhookUrl)")
    .action(async (options, command: Command) => {
      const output = outputOf(command);
      const outcome = await clientOf(command).webhooks.test(options.endpoint ? { endpointId: String(options.endpoint) } : {});
      if (output.json) printJson(output, outcome);
      else output.out(`${outcome.succeeded ? "Delivered" : "Failed"}: ${outcome.delivery ? deliveryLines(outcome.delivery) : "no delivery"}`);
      if (!outcome.succeeded) throw new ExitError(EXIT.JOB_FAILED, "The test webhook was not answered with 2xx");
    });
  registerEndpointCommands(webhooks, { clientOf, outputOf });

  return program;
}

/** Follows a job with a live display; exit 3 when it ends failed or cancelled. */
async function watch(client: RenderbusClient, output: Output, jobId: string, timeoutSeconds: number): Promise<void> {
  const progress = new JobProgress(output, jobId);
  let job;
  try {
    job = await client.waitForJob(jobId, { timeoutMs: timeoutSeconds * 1000, onUpdate: (update) => progress.update(update) });
  } finally {
    progress.stop();
  }
  if (output.json) output.out(JSON.stringify(job));
  else output.out(jobLines(job));
  if (job.status !== "completed") throw new ExitError(EXIT.JOB_FAILED, job.error ? `Job ${job.status}: ${job.error.code}: ${job.error.message}` : `Job ${job.status}`);
}

function baseUrlOf(options: GlobalOptions): string {
  return options.baseUrl ?? process.env.RENDERBUS_BASE_URL ?? readConfig().baseUrl ?? DEFAULT_BASE_URL;
}

function savedListenSecret(): string {
  const path = configPath();
  const config = readConfig(path);
  if (config.listenSecret) return config.listenSecret;
  const secret = newListenSecret();
  try {
    writeConfig({ ...config, listenSecret: secret }, path);
  } catch {
    // A read-only config only means a new secret next time.
  }
  return secret;
}

async function readKey(): Promise<string> {
  if (!process.stdin.isTTY) {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString("utf8");
  }
  const prompt = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return await prompt.question("API key (rb_...): ");
  } finally {
    prompt.close();
  }
}

const collect = (value: string, previous: string[]) => [...previous, value];

function positiveNumber(value: string): number {
  const number = Number(value);
  if (!Number.isFinite(number) || number <= 0) throw new InvalidArgumentError("Not a positive number.");
  return number;
}

function splitPair(pair: string, flag: string): [string, string] {
  const at = pair.indexOf("=");
  if (at <= 0) throw new UsageError(`${flag} takes name=value, got: ${pair}`);
  return [pair.slice(0, at), pair.slice(at + 1)];
}

function parseParam(pair: string): [string, unknown] {
  const [name, value] = splitPair(pair, "--param");
  try {
    return [name, JSON.parse(value)];
  } catch {
    return [name, value];
  }
}

function parseJson(text: string, flag: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new UsageError(`${flag} is not valid JSON`);
  }
}

function jsonObject(text: string, flag: string): Record<string, unknown> {
  const value = parseJson(text, flag);
  if (!value || typeof value !== "object" || Array.isArray(value)) throw new UsageError(`${flag} must be a JSON object`);
  return value as Record<string, unknown>;
}
