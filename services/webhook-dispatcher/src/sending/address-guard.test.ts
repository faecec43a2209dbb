import { describe, expect, it } from "vitest";
import { isBlockedAddress } from "./address-guard.js";
import { keptResponse } from "./delivery-sender.js";

const answer = (remoteAddress: string | null) => ({ responseExcerpt: "internal secret", responseHeaders: { "x-internal": "yes" }, remoteAddress });
const dropped = { responseExcerpt: null, responseHeaders: null };

/** The block list itself is tested once, in libs/address-guard; this is what the dispatcher does with it. */
describe("response bodies and headers of webhook attempts", () => {
  it("keeps the response when the guard was on: the connection passed it", () => {
    expect(keptResponse(answer("10.0.0.1"), { allowPrivateAddresses: false })).toEqual({ responseExcerpt: "internal secret", responseHeaders: { "x-internal": "yes" } });
  });

  it.each(["127.0.0.1", "::1", "169.254.169.254", "::ffff:10.0.0.1", "2002:a00:1::", "fe80::1%eth0"])(
    "drops the response of a connection to %s, a private address let through by ALLOW_PRIVATE_ADDRESSES",
    (remoteAddress) => {
      expect(keptResponse(answer(remoteAddress), { allowPrivateAddresses: true })).toEqual(dropped);
    },
  );

  it("drops the response when the address the connection reached is unknown", () => {
    expect(keptResponse(answer(null), { allowPrivateAddresses: true })).toEqual(dropped);
  });

  it("keeps the response of a connection to a public address with the guard off", () => {
    expect(keptResponse(answer("93.184.216.34"), { allowPrivateAddresses: true }).responseExcerpt).toBe("internal secret");
  });

  it("follows the given policy (tests that stand a loopback receiver in for a public one)", () => {
    const exempt = (address: string) => address !== "127.0.0.1" && isBlockedAddress(address);
    expect(keptResponse(answer("127.0.0.1"), { allowPrivateAddresses: true, addressPolicy: exempt }).responseExcerpt).toBe("internal secret");
  });
});
