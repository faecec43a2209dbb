import { describe, expect, it } from "vitest";
import { isTransientJetStreamError, whenJetStreamAnswers } from "./jetstream-start-up.js";

const named = (name: string, message = name, extra: Record<string, unknown> = {}) => Object.assign(new Error(message), { name }, extra);

describe("which JetStream start-up errors pass by themselves", () => {
  it.each([
    ["a request that got no answer in time", named("TimeoutError", "timeout"), true],
    ["nobody answering the API subject yet", named("NoRespondersError"), true],
    ["JetStream not up on the server yet", named("JetStreamNotEnabled", "jetstream is not enabled"), true],
    ["a 503 from the API", named("JetStreamApiError", "JetStream system temporarily unavailable", { status: 503 }), true],
    ["a stream's replicas not placeable yet", named("JetStreamApiError", "no suitable peers for placement", { status: 500 }), true],
    ["a timeout wrapped by a failed request", named("RequestError", "request failed", { cause: named("TimeoutError", "timeout") }), true],
    ["a refused stream config", named("JetStreamApiError", "subjects overlap with an existing stream", { status: 400 }), false],
    ["a permission refused", named("PermissionViolationError", "Permissions Violation for Publish"), false],
    ["anything else", new Error("boom"), false],
  ])("%s: %s", (_what, error, transient) => {
    expect(isTransientJetStreamError(error)).toBe(transient);
  });
});

describe("whenJetStreamAnswers", () => {
  it("calls again while the error is transient, and returns the first answer", async () => {
    let calls = 0;
    const answer = await whenJetStreamAnswers("test", async () => {
      calls += 1;
      if (calls < 3) throw named("TimeoutError", "timeout");
      return "ok";
    });
    expect([answer, calls]).toEqual(["ok", 3]);
  });

  it("throws a refusal at once, without calling again", async () => {
    let calls = 0;
    const refusal = named("JetStreamApiError", "subjects overlap with an existing stream", { status: 400 });
    await expect(
      whenJetStreamAnswers("test", async () => {
        calls += 1;
        throw refusal;
      }),
    ).rejects.toBe(refusal);
    expect(calls).toBe(1);
  });

  it("gives up with the last transient error once its time is spent", async () => {
    let calls = 0;
    await expect(
      whenJetStreamAnswers(
        "test",
        async () => {
          calls += 1;
          throw named("TimeoutError", "timeout");
        },
        { budgetMs: 600 },
      ),
    ).rejects.toThrow("timeout");
    expect(calls).toBeGreaterThan(1);
  });
});
