import http from "node:http";
import https from "node:https";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import { createGuardedLookup, createHostLookup, isBlockedAddress, refuseBlockedLiteral, type AddressPolicy } from "@renderbus/address-guard";

/** Raised when an input URL is, or resolves to, an address the SSRF guard refuses (the shared guard's error). */
export type { AddressPolicy };

type ConnectCallback = (error: Error | null, socket: Duplex) => void;

/**
 * `agent`, made to refuse IP literals of forbidden addresses: net.connect skips `lookup` for those, so they are
 * checked before the connection is made. Handing the error to the agent's callback makes it an `error` event on the
 * request, like any connection failure. One function for core's http and https agents alike.
 */
function refusingForbiddenLiterals<A extends http.Agent>(agent: A, forbids: AddressPolicy): A {
  const connect = agent.createConnection.bind(agent) as (options: http.ClientRequestArgs, callback: ConnectCallback) => Socket | undefined;
  agent.createConnection = (options: http.ClientRequestArgs, callback: ConnectCallback): Socket | undefined => {
    const refusal = refuseBlockedLiteral(String(options.host ?? options.hostname ?? ""), forbids);
    if (!refusal) return connect(options, callback);
    process.nextTick(callback, refusal);
    return undefined;
  };
  return agent;
}

/** Deadlines of one input download besides the whole-download one (which the caller gives per download). */
export interface InputTimeouts {
  /** TCP connect, plus the TLS handshake for https: a server that accepts and never answers stops here. */
  connectTimeoutMs: number;
  /** From connected to the end of the response headers. */
  headersTimeoutMs: number;
  /** The longest silence between two pieces of the body. */
  bodyIdleTimeoutMs: number;
}

/**
 * How input downloads connect: Node's core http/https agents, one connection per request (no pool, so nothing stays
 * open after a download), and unless `allowPrivateAddresses` (ALLOW_PRIVATE_ADDRESSES=true) an SSRF guard that refuses
 * loopback, private, link-local and metadata addresses (libs/address-guard), for IP literals in the URL and for every
 * DNS answer at connect time, on every redirect hop.
 */
export interface InputAgent extends InputTimeouts {
  readonly allowPrivateAddresses: boolean;
  agentFor(protocol: "http:" | "https:"): http.Agent;
  /** Destroys any socket still open (none should be: downloads close their connection). */
  close(): Promise<void>;
}

export const DEFAULT_INPUT_TIMEOUTS: InputTimeouts = { connectTimeoutMs: 10_000, headersTimeoutMs: 30_000, bodyIdleTimeoutMs: 30_000 };

/**
 * @param options.addressPolicy replaces {@link isBlockedAddress} (tests exempt their own server's address so that a
 *   redirect from it to a forbidden one can be shown refused).
 */
export function createInputAgent(options: { allowPrivateAddresses: boolean; addressPolicy?: AddressPolicy } & Partial<InputTimeouts>): InputAgent {
  const { allowPrivateAddresses } = options;
  const forbids = options.addressPolicy ?? isBlockedAddress;
  const agentOptions: http.AgentOptions = { keepAlive: false, lookup: (allowPrivateAddresses ? createHostLookup() : createGuardedLookup(forbids)) as never };
  const httpAgent = allowPrivateAddresses ? new http.Agent(agentOptions) : refusingForbiddenLiterals(new http.Agent(agentOptions), forbids);
  const httpsAgent = allowPrivateAddresses ? new https.Agent(agentOptions) : refusingForbiddenLiterals(new https.Agent(agentOptions), forbids);
  return {
    allowPrivateAddresses,
    connectTimeoutMs: options.connectTimeoutMs ?? DEFAULT_INPUT_TIMEOUTS.connectTimeoutMs,
    headersTimeoutMs: options.headersTimeoutMs ?? DEFAULT_INPUT_TIMEOUTS.headersTimeoutMs,
    bodyIdleTimeoutMs: options.bodyIdleTimeoutMs ?? DEFAULT_INPUT_TIMEOUTS.bodyIdleTimeoutMs,
    agentFor: (protocol) => (protocol === "https:" ? httpsAgent : httpAgent),
    async close() {
      httpAgent.destroy();
      httpsAgent.destroy();
    },
  };
}
