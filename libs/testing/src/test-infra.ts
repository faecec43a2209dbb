import { inject } from 'vitest';
import type { TestInfraUrls } from './provided-context.js';

/**
 * The PostgreSQL, NATS and Redis URLs that the vitest global setup started (or took from `DATABASE_URL`,
 * `NATS_URL`, `REDIS_URL`) for this test run. Call it inside a test file.
 * @throws Error when the global setup did not provide infrastructure: integration tests must be named
 *   `*.int.test.ts` (or `*.e2e.test.ts`) so they run in the `integration` project.
 */
export function testInfra(): TestInfraUrls {
  const infra = inject('infra');
  if (infra === undefined) {
    throw new Error(
      'testInfra(): no infrastructure was provided; name the file *.int.test.ts so it runs in the "integration" ' +
        'project, whose global setup starts PostgreSQL, NATS and Redis',
    );
  }
  return infra;
}
