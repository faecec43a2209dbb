import { createLogger } from "@renderbus/telemetry";
import { describeJobEvent, startJobSubscriber } from "./job-subscriber.js";

// Prints every job event: `NATS_URL=nats://127.0.0.1:4222 npm start -w @renderbus/example-job-subscriber`.
const logger = createLogger({ service: "job-subscriber", level: process.env.LOG_LEVEL ?? "warn" });
const subscriber = await startJobSubscriber({
  natsUrl: process.env.NATS_URL ?? "nats://127.0.0.1:4222",
  durable: process.env.SUBSCRIBER_DURABLE ?? "example-job-subscriber",
  namespace: process.env.NATS_NAMESPACE ?? "",
  deliverPolicy: process.env.SUBSCRIBER_FROM === "all" ? "all" : "new",
  logger,
  onEvent: (event) => void process.stdout.write(`${describeJobEvent(event)}\n`),
});
process.stdout.write("listening on jobs.events.> (Ctrl-C to stop)\n");
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => void subscriber.stop().then(() => process.exit(0)));
}
