import { writeFile } from "node:fs/promises";
import path from "node:path";
import QRCode from "qrcode";
import type { QrGenerateParams } from "@renderbus/job-types";
import { inputError } from "../job-failure.js";
import type { Provider } from "./provider.js";

/** The `qrcode` options for a QR job (pure). */
export function qrOptions(params: QrGenerateParams): { width: number; margin: number; errorCorrectionLevel: "M" } {
  return { width: params.size, margin: 2, errorCorrectionLevel: "M" };
}

/** `qr.generate`: a QR code image, rendered by the `qrcode` library (no input, no ffmpeg). */
export const qrGenerateProvider: Provider<QrGenerateParams> = {
  type: "qr.generate",
  async run({ params, workDir }) {
    const output = path.join(workDir, `output.${params.format}`);
    try {
      if (params.format === "svg") {
        await writeFile(output, await QRCode.toString(params.content, { ...qrOptions(params), type: "svg" }));
      } else {
        await QRCode.toFile(output, params.content, { ...qrOptions(params), type: "png" });
      }
    } catch {
      // The only way the library fails on validated params is content beyond a QR code's capacity.
      throw inputError("params.content: is too long to fit in a QR code");
    }
    return {
      path: output,
      extension: params.format,
      contentType: params.format === "svg" ? "image/svg+xml" : "image/png",
      metadata: { durationMs: null, width: params.size, height: params.size },
    };
  },
};
