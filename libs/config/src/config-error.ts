/** Thrown when the environment does not satisfy a service's config schema; the message names every bad variable. */
export class ConfigError extends Error {
  override readonly name = "ConfigError";
  constructor(readonly problems: { variable: string; message: string }[]) {
    super(`Invalid configuration: ${problems.map((p) => `${p.variable}: ${p.message}`).join("; ")}`);
  }
}
