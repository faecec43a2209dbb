import { tmpdir } from "node:os";
import { join } from "node:path";

/** Names the machine's temporary directory, outside the run's: where logs kept for a post-mortem go. */
export const KEPT_LOGS_DIR_VARIABLE = "RENDERBUS_TEST_KEPT_LOGS_DIR";

/**
 * Where a test writes a log meant to outlive the run (the output of a failed `npm start`): the machine's temporary
 * directory, since the run's own is removed at its end.
 */
export function keptLogPath(name: string): string {
  return join(process.env[KEPT_LOGS_DIR_VARIABLE] ?? tmpdir(), name);
}
