import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { isIP } from "node:net";
import { Agent, buildConnector } from "undici";
import { isForbiddenAddress } from "./address-policy.js";

/** Raised when an input URL resolves to an address the SSRF guard refuses. */
export class ForbiddenAddressError extends Error {
  override readonly name = "ForbiddenAddressError";
  readonly code = "ERR_FORBIDDEN_ADDRESS";
  constructor(readonly host: string) {
    super(`address of ${host} is not allowed`);
  }
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for net/tls.connect that refuses forbidden addresses. It runs on every connection with the addresses
 * the socket is about to use, so a DNS answer that changes between a check and the connect (rebinding) cannot
 * slip through.
 */
function guardedLookup(hostname: string, options: { all?: boolean; family?: number }, callback: LookupCallback): void {
  dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) return callback(error, []);
    const list = addresses as LookupAddress[];
    if (list.length === 0 || list.some((entry) => isForbiddenAddress(entry.address))) {
      return callback(new ForbiddenAddressError(hostname), []);
    }
    if (options.all) return callback(null, list);
    const first = list[0]!;
    callback(null, first.address, first.family);
  });
}

/**
 * An undici Agent for fetching inputs. With `allowPrivateAddresses` false (production) it refuses loopback, private,
 * link-local and metadata addresses, for IP literals in the URL and for every DNS answer at connect time.
 */
export function createInputAgent({ allowPrivateAddresses, connectTimeoutMs }: { allowPrivateAddresses: boolean; connectTimeoutMs: number }): Agent {
  if (allowPrivateAddresses) return new Agent({ connect: { timeout: connectTimeoutMs } });
  const connector = buildConnector({ timeout: connectTimeoutMs, lookup: guardedLookup } as buildConnector.BuildOptions);
  return new Agent({
    connect(options, callback) {
      // net.connect skips `lookup` for IP literals, so those are checked here.
      const host = options.hostname.replace(/^\[|\]$/g, "");
      if (isIP(host) !== 0 && isForbiddenAddress(host)) {
        callback(new ForbiddenAddressError(host), null);
        return;
      }
      connector(options, callback);
    },
  });
}
