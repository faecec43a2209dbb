import { describe, expect, it } from "vitest";
import type { webhooks } from "@renderbus/contracts";
import { presentDelivery } from "./present.js";

const delivery = (requestHeaders: Record<string, string>): webhooks.Delivery =>
  ({
    id: "del_1",
    orgId: "org_1",
    event: "job.completed",
    status: "succeeded",
    attempts: 1,
    url: "https://hooks.example.com/a",
    createdAt: 1,
    endpointId: "ep_default",
    body: '{"event":"job.completed"}',
    attemptLog: [{ attempt: 1, startedAt: 2, responseStatus: 200, latencyMs: 3, responseExcerpt: "ok", requestHeaders, responseHeaders: { "x-receiver": "a" } }],
  }) as webhooks.Delivery;

describe("presentDelivery", () => {
  it("shows the attempt's headers and the body but never a signature header, whatever its brand or letter case", () => {
    const shown = presentDelivery(
      delivery({
        "X-Renderbus-Event": "job.completed",
        "webhook-id": "del_1",
        "X-Renderbus-Signature": "sha256=SIGSEED1",
        "X-Acme-Signature": "sha256=SIGACME2",
        "Webhook-Signature": "v1,SIGSTD3",
      }),
    );
    expect(shown.body).toBe('{"event":"job.completed"}');
    expect(shown.attemptLog[0]).toMatchObject({ requestHeaders: { "X-Renderbus-Event": "job.completed", "webhook-id": "del_1" }, responseHeaders: { "x-receiver": "a" }, responseExcerpt: "ok" });
    expect(JSON.stringify(shown)).not.toMatch(/signature|SIGSEED1|SIGACME2|SIGSTD3/i);
  });
});
