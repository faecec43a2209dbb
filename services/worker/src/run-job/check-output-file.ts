import type { Stats } from "node:fs";
import { lstat } from "node:fs/promises";
import { providerError } from "../job-failure.js";

/** What a path that is not a regular file is, in words a customer can read. */
function kindOf(file: Stats): string {
  if (file.isSymbolicLink()) return "a symbolic link";
  if (file.isFIFO()) return "a named pipe (FIFO)";
  if (file.isDirectory()) return "a directory";
  if (file.isSocket()) return "a socket";
  if (file.isBlockDevice() || file.isCharacterDevice()) return "a device";
  return "of an unknown kind";
}

/**
 * The size of the provider's output, once it is known to be a regular file. The job's directory is the one place the
 * sandbox can write, so a decoder exploit could leave the output as a symlink to another tenant's output (which the
 * worker would then measure and publish) or as a FIFO (whose open() would block one of libuv's threads for good).
 * Checked before anything opens the path; the measuring and the store follow it.
 * @throws JobFailure PROVIDER_ERROR when the output is missing or is anything but a regular file.
 */
export async function checkOutputFile(outputPath: string): Promise<{ size: number }> {
  // Not racy: once the provider has returned, every process of its sandbox is dead (bwrap's pid namespace ends with it), so nothing can swap the path after this lstat.
  const file = await lstat(outputPath).catch(() => {
    throw providerError("the provider produced an unreadable output");
  });
  if (!file.isFile()) throw providerError(`the provider's output is ${kindOf(file)}, not a regular file`);
  return { size: file.size };
}
