import { describe, expect, it } from "vitest";
// Test-only: the one list the jobs service stores and the gateway validates against.
import { JOB_STATUSES as SERVICE_JOB_STATUSES, TERMINAL_JOB_STATUSES as SERVICE_TERMINAL_STATUSES } from "@renderbus/job-types";
import { JOB_STATUSES, TERMINAL_STATUSES } from "./types.js";

describe("SDK job statuses", () => {
  it("lists the statuses a job goes through, in the service's lifecycle order", () => {
    expect(JOB_STATUSES).toEqual(SERVICE_JOB_STATUSES);
    expect(TERMINAL_STATUSES).toEqual(SERVICE_TERMINAL_STATUSES);
  });
});
