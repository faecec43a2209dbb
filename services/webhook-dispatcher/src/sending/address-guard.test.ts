import { describe, expect, it } from "vitest";
import { isBlockedAddress } from "./address-guard.js";
import { keptExcerpt } from "./delivery-sender.js";

/** The block list itself is tested once, in libs/address-guard; this is what the dispatcher does with it. */
describe("response bodies of webhook attempts", () => {
  it("keeps the body when the guard was on: the connection passed it", async () => {
    expect(await keptExcerpt("https://hooks.example.com/x", "ok", { allowPrivateAddresses: false })).toBe("ok");
  });

  it.each(["http://127.0.0.1:8080/hook", "http://localhost:8080/hook", "http://169.254.169.254/latest/meta-data", "http://[::ffff:10.0.0.1]/", "http://[2002:a00:1::]/"])(
    "drops the body of %s, a private target let through by ALLOW_PRIVATE_ADDRESSES",
    async (url) => {
      expect(await keptExcerpt(url, "internal secret", { allowPrivateAddresses: true })).toBeNull();
    },
  );

  it("keeps the body of a public target with the guard off", async () => {
    expect(await keptExcerpt("http://93.184.216.34/hook", "ok", { allowPrivateAddresses: true })).toBe("ok");
  });

  it("follows the given policy (tests that stand a loopback receiver in for a public one)", async () => {
    const exempt = (address: string) => address !== "127.0.0.1" && isBlockedAddress(address);
    expect(await keptExcerpt("http://127.0.0.1:8080/hook", "ok", { allowPrivateAddresses: true, addressPolicy: exempt })).toBe("ok");
  });

  it("has nothing to keep when there was no body", async () => {
    expect(await keptExcerpt("http://127.0.0.1/", null, { allowPrivateAddresses: true })).toBeNull();
  });
});
