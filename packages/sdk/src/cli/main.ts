import { CommanderError } from "commander";
import { buildProgram } from "./program.js";
import { EXIT, exitCodeOf, messageOf } from "./exit-codes.js";

/** Runs `renderbus` with the process arguments; every failure becomes a message on stderr and an exit code. */
export async function main(argv: string[] = process.argv): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
    return EXIT.OK;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version are "errors" to commander; its own message was printed already.
      return error.exitCode === 0 ? EXIT.OK : EXIT.USAGE;
    }
    process.stderr.write(`renderbus: ${messageOf(error)}\n`);
    return exitCodeOf(error);
  }
}

process.exitCode = await main();
