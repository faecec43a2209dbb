import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { signOutputUrl } from "@renderbus/storage";
import { gatewayConfigSchema } from "../config.js";
import type { GatewayDeps } from "../deps.js";
import { inertGatewayApp } from "./inert-gateway.test-support.js";

/** Every line the gateway's logger writes, as text. */
function logCapture() {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      lines.push(...chunk.toString().split("\n").filter(Boolean));
      callback();
    },
  });
  return { destination, lines };
}

describe("what the gateway logs about a failing request (SECURITY-AUDIT finding 23)", () => {
  it("logs the path of a failing /outputs download, never its signature or query", async () => {
    const { destination, lines } = logCapture();
    const failingStore = { open: async () => Promise.reject(new Error("output store unreachable")) } as unknown as GatewayDeps["outputs"];
    const app = await inertGatewayApp({ outputs: failingStore }, { logDestination: destination });
    const secret = gatewayConfigSchema.parse({}).OUTPUT_SIGNING_SECRET;
    const link = new URL(signOutputUrl({ publicUrl: "http://127.0.0.1:3000", key: "org_1/job_1/output.mp4", expiresAt: Date.now() + 60_000, secret }));
    const signature = link.searchParams.get("signature")!;

    const response = await app.inject({ method: "GET", url: `${link.pathname}${link.search}` });
    await app.close();

    expect(response.statusCode).toBe(500);
    const failure = lines.map((line) => JSON.parse(line) as Record<string, unknown>).find((line) => line.msg === "request failed");
    expect(failure).toMatchObject({ path: "/outputs/org_1/job_1/output.mp4", method: "GET" });
    const request = lines.map((line) => JSON.parse(line) as Record<string, unknown>).find((line) => line.msg === "request");
    expect(request).toMatchObject({ route: "/outputs/*", status: 500 });
    expect(lines.join("\n")).not.toContain(signature);
    expect(lines.join("\n")).not.toContain("expires=");
  });
});
