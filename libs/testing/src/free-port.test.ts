import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { getFreePort } from './local-process.js';

describe('getFreePort', () => {
  it('hands out ports that can be bound, never the same one twice in a process', async () => {
    const ports = await Promise.all(Array.from({ length: 40 }, () => getFreePort()));
    expect(new Set(ports).size).toBe(ports.length);
    const port = ports[0]!;
    await new Promise<void>((listening, failed) => {
      const server = createServer();
      server.once('error', failed);
      server.listen(port, '127.0.0.1', () => server.close(() => listening()));
    });
  });
});
