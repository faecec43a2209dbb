/**
 * Values the vitest global setup (global-setup.ts) hands to test files through `inject()`.
 */

/** Connection URLs of the shared test infrastructure. */
export interface TestInfraUrls {
  databaseUrl: string;
  /** With the harness superuser's credentials when the run started its own server (see local-nats.ts). */
  natsUrl: string;
  redisUrl: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    /** Set by libs/testing/src/global-setup.ts; absent when only the `unit` project runs. */
    infra?: TestInfraUrls;
  }
}
