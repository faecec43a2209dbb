import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { SERVICES, START_WAVES, serviceNode } from "./system.js";

describe("START_WAVES (the order a test system's services start in)", () => {
  it("starts every service exactly once", () => {
    expect(START_WAVES.flat().sort()).toEqual([...SERVICES].sort());
  });

  it("starts auth and jobs, which declare the streams the others consume, before the others", () => {
    expect([...START_WAVES[0]!].sort()).toEqual(["auth", "jobs"]);
  });
});

describe("serviceNode (the node binary a test system's services run on)", () => {
  it("is RENDERBUS_SERVICE_NODE when set (the test run sets Node 24), else this process's node", () => {
    expect(serviceNode({ RENDERBUS_SERVICE_NODE: "/opt/node24/bin/node" })).toBe("/opt/node24/bin/node");
    expect(serviceNode({})).toBe(process.execPath);
    expect(serviceNode({ RENDERBUS_SERVICE_NODE: "" })).toBe(process.execPath);
  });

  // The global setup of a run with integration tests sets it (or logs why it could not); a unit-only run starts no
  // services and leaves it unset, and reports this case as skipped rather than passed.
  it.skipIf(!process.env.RENDERBUS_SERVICE_NODE)("runs the services of this test run on Node 24", () => {
    expect(execFileSync(process.env.RENDERBUS_SERVICE_NODE!, ["--version"], { encoding: "utf8" })).toMatch(/^v24\./);
  });
});
