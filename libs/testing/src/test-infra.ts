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

/**
 * STORAGE and the S3_* variables when the run asks for `STORAGE=s3` (the global setup then points them at its local
 * S3 server), else nothing: spread into a config a test builds itself, so its outputs go where the run's do.
 */
export function testStorageEnv(): Record<string, string> {
  if (process.env.STORAGE !== 's3') return {};
  return Object.fromEntries(Object.entries(process.env).filter((entry): entry is [string, string] => /^(STORAGE|S3_[A-Z_]+)$/.test(entry[0]) && entry[1] !== undefined));
}
