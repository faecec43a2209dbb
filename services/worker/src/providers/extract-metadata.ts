import { writeFile } from "node:fs/promises";
import path from "node:path";
import type { ExtractMetadataParams } from "@renderbus/job-types";
import type { Provider } from "./provider.js";

/**
 * `extract.metadata`: the ffprobe summary of the source as a JSON file. The result metadata carries the source's
 * duration and size, which is what the caller asked about.
 */
export const extractMetadataProvider: Provider<ExtractMetadataParams> = {
  type: "extract.metadata",
  describesInputs: true,
  async run({ probes, workDir }) {
    const probe = probes.source!;
    const output = path.join(workDir, "output.json");
    const summary = { format: probe.format, streams: probe.streams, durationMs: probe.durationMs, width: probe.width, height: probe.height };
    await writeFile(output, JSON.stringify(summary, null, 2));
    return {
      path: output,
      extension: "json",
      contentType: "application/json",
      metadata: { durationMs: probe.durationMs, width: probe.width, height: probe.height },
    };
  },
};
