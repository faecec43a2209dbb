import { createSocket } from "node:dgram";

/** What the stub answers for a name (`*.zone` for every name under a zone): A records, or nothing at all. */
export type StubAnswer = { a: string[] } | "silent";

export interface StubDnsServer {
  /** `"127.0.0.1:<port>"`, for a resolver's `servers`. */
  readonly address: string;
  /** The names asked so far, one per query (A and AAAA each count). */
  readonly queries: string[];
  close(): Promise<void>;
}

/**
 * A UDP DNS server on 127.0.0.1 for tests: answers A queries of the names in `answers`, leaves AAAA queries of them
 * empty (NOERROR, no records), never answers "silent" names and answers NXDOMAIN for every other name.
 */
export async function startStubDnsServer(answers: Record<string, StubAnswer>, port = 0): Promise<StubDnsServer> {
  const socket = createSocket("udp4");
  const queries: string[] = [];
  socket.on("message", (query, peer) => {
    // The question: length-prefixed labels from byte 12, ended by a zero byte, then QTYPE and QCLASS.
    const labels: string[] = [];
    let offset = 12;
    while (query[offset]! > 0) {
      labels.push(query.subarray(offset + 1, offset + 1 + query[offset]!).toString("latin1"));
      offset += 1 + query[offset]!;
    }
    const questionEnd = offset + 5;
    const name = labels.join(".").toLowerCase();
    const type = query.readUInt16BE(offset + 1);
    queries.push(name);
    const answer = answers[name] ?? answers[`*.${name.slice(name.indexOf(".") + 1)}`];
    if (answer === "silent") return;
    const records = answer && type === 1 ? answer.a : [];
    const header = Buffer.alloc(12);
    query.copy(header, 0, 0, 2); // the query's id
    header.writeUInt16BE(answer ? 0x8180 : 0x8183, 2); // a response, recursion available; NOERROR or NXDOMAIN
    header.writeUInt16BE(1, 4); // the question, echoed
    header.writeUInt16BE(records.length, 6);
    const resourceRecords = records.map((address) => {
      const record = Buffer.alloc(16);
      record.writeUInt16BE(0xc00c, 0); // the name: a pointer to the question's
      record.writeUInt16BE(1, 2); // A
      record.writeUInt16BE(1, 4); // IN
      record.writeUInt32BE(60, 6); // TTL
      record.writeUInt16BE(4, 10);
      address.split(".").forEach((octet, index) => record.writeUInt8(Number(octet), 12 + index));
      return record;
    });
    socket.send(Buffer.concat([header, query.subarray(12, questionEnd), ...resourceRecords]), peer.port, peer.address);
  });
  await new Promise<void>((resolve) => socket.bind(port, "127.0.0.1", resolve));
  return {
    address: `127.0.0.1:${socket.address().port}`,
    queries,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}
