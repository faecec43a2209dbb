import { describe, expect, it } from "vitest";
// Test-only: the jobs service's job model is where the statuses are decided.
import { JOB_STATUSES as SERVICE_JOB_STATUSES, TERMINAL_STATUSES as SERVICE_TERMINAL_STATUSES } from "../../../services/jobs/src/job/job.js";
import { JOB_STATUSES, TERMINAL_STATUSES } from "./types.js";

describe("SDK job statuses", () => {
  it("lists the statuses a job goes through, in the jobs service's lifecycle order", () => {
    expect(JOB_STATUSES).toEqual(SERVICE_JOB_STATUSES);
    expect(TERMINAL_STATUSES).toEqual(SERVICE_TERMINAL_STATUSES);
  });
});
