import { BaseSequencer, type TestSpecification } from "vitest/node";

/**
 * Test files that take minutes, slowest first (a full two-worker run on 2026-11-29: 60-320 s each, against seconds
 * for most). Paths from the repository root.
 */
export const SLOW_TEST_FILES = [
  "bench/bench.quick.int.test.ts",
  "e2e/job-progress.e2e.test.ts",
  "scripts/start.int.test.ts",
  "e2e/chaos/chaos-reduced.e2e.test.ts",
  "e2e/dashboard/dashboard.e2e.test.ts",
  "e2e/jobs.e2e.test.ts",
  "e2e/reliability/fuzz.e2e.test.ts",
  "e2e/sse-streams.e2e.test.ts",
  "packages/sdk/test/cli.e2e.test.ts",
  "e2e/auth.e2e.test.ts",
] as const;

/**
 * Starts the files of SLOW_TEST_FILES first, in that order, then the rest in vitest's own order. Without a results
 * cache (a fresh checkout, as in CI) vitest starts larger files first, and the quick bench's short file started last:
 * one worker then ran it alone for the last five minutes of the suite. With a cache, vitest's order (failed first,
 * then longest) still decides among the rest.
 */
export class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    return slowFirst(await super.sort(files), (file) => file.moduleId);
  }
}

/** `files` with the slow ones moved to the front in SLOW_TEST_FILES' order; the others keep their order. */
export function slowFirst<T>(files: T[], pathOf: (file: T) => string): T[] {
  const rank = (file: T) => {
    const path = pathOf(file).replaceAll("\\", "/");
    const index = SLOW_TEST_FILES.findIndex((slow) => path.endsWith(`/${slow}`));
    return index === -1 ? SLOW_TEST_FILES.length : index;
  };
  return files
    .map((file, order) => ({ file, order, rank: rank(file) }))
    .sort((a, b) => a.rank - b.rank || a.order - b.order)
    .map(({ file }) => file);
}
