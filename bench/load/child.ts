/**
 * Entry of a load child process: reads one LoadSpec (JSON) from argv, runs it, prints one LoadResult (JSON) line.
 * Started by runLoad; never run by hand.
 */
import { runAppendLoad } from "./append-load.js";
import { runHttpLoad } from "./http-load.js";
import type { LoadResult, LoadSpec } from "./load-spec.js";
import { runPostLoop } from "./post-loop.js";

const spec = JSON.parse(process.argv[2] ?? "{}") as LoadSpec;

const run = (): Promise<LoadResult> => {
  switch (spec.kind) {
    case "http":
      return runHttpLoad(spec);
    case "append":
      return runAppendLoad(spec);
    case "post-loop":
      return runPostLoop(spec);
  }
};

run().then(
  (result) => {
    process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
    process.exit(0);
  },
  (error: unknown) => {
    process.stderr.write(`load failed: ${(error as Error).stack ?? String(error)}\n`);
    process.exit(1);
  },
);
