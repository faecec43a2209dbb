import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";

/** What `renderbus login` stores. */
export interface CliConfig {
  baseUrl?: string;
  apiKey?: string;
  /** The local signing secret of `webhooks listen`, kept so a local handler's configuration stays valid. */
  listenSecret?: string;
}

export const DEFAULT_BASE_URL = "http://127.0.0.1:3000";

/** `$RENDERBUS_CONFIG`, else `$XDG_CONFIG_HOME/renderbus/config.json`, else `~/.config/renderbus/config.json`. */
export function configPath(env: NodeJS.ProcessEnv = process.env): string {
  if (env.RENDERBUS_CONFIG) return env.RENDERBUS_CONFIG;
  return join(env.XDG_CONFIG_HOME || join(homedir(), ".config"), "renderbus", "config.json");
}

export function readConfig(path = configPath()): CliConfig {
  try {
    return JSON.parse(readFileSync(path, "utf8")) as CliConfig;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return {};
    throw new Error(`Cannot read ${path}: ${(error as Error).message}`);
  }
}

/** Writes the config readable by the owner only (0600, directory 0700): it holds an API key. */
export function writeConfig(config: CliConfig, path = configPath()): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  writeFileSync(path, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  // writeFileSync keeps the mode of an existing file; tighten it in case it was created looser.
  chmodSync(path, 0o600);
}
