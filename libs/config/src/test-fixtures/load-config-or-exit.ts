/** A service entry point in miniature: loads its config or exits, for the subprocess test of loadConfigOrExit. */
import { z } from "zod";
import { env, loadConfigOrExit } from "../index.js";

const config = loadConfigOrExit(
  z.object({
    DATABASE_URL: env.url(["postgres", "postgresql"]),
    FIXTURE_PORT: env.port(3000),
  }),
  "fixture",
);
process.stdout.write(`started on ${config.FIXTURE_PORT}\n`);
