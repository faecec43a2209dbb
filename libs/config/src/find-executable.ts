import { accessSync, constants } from "node:fs";
import path from "node:path";

/** The directories of PATH, in order (empty entries left out). */
export function pathDirectories(env: NodeJS.ProcessEnv = process.env): string[] {
  return (env.PATH ?? "").split(path.delimiter).filter(Boolean);
}

/**
 * The absolute path of the first executable file called `name` in `dirs` (by default the directories of PATH), or
 * undefined when there is none. Synchronous: services call it while choosing their defaults at start.
 */
export function findExecutable(name: string, dirs: readonly string[] = pathDirectories()): string | undefined {
  for (const dir of dirs) {
    const candidate = path.join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here; keep looking
    }
  }
  return undefined;
}
