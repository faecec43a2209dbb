import { describe, expect, it } from "vitest";
import { decideAfterAttempt } from "./retry-schedule.js";

const schedule = [5000, 25000, 125000];

describe("decideAfterAttempt", () => {
  it("marks a delivery succeeded on a 2xx and owes nothing more", () => {
    expect(decideAfterAttempt(1, { succeeded: true, finishedAt: 100 }, schedule)).toEqual({ status: "succeeded", nextAttemptAt: null });
  });

  it("retries 5 s, 25 s and 125 s after each failure", () => {
    expect(decideAfterAttempt(1, { succeeded: false, finishedAt: 1000 }, schedule)).toEqual({ status: "pending", nextAttemptAt: 6000 });
    expect(decideAfterAttempt(2, { succeeded: false, finishedAt: 1000 }, schedule)).toEqual({ status: "pending", nextAttemptAt: 26000 });
    expect(decideAfterAttempt(3, { succeeded: false, finishedAt: 1000 }, schedule)).toEqual({ status: "pending", nextAttemptAt: 126000 });
  });

  it("marks the delivery failed after the fourth attempt fails", () => {
    expect(decideAfterAttempt(4, { succeeded: false, finishedAt: 1000 }, schedule)).toEqual({ status: "failed", nextAttemptAt: null });
  });
});
