import { writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import { Worker } from "node:worker_threads";
import QRCode from "qrcode";
import type { QrGenerateParams } from "@renderbus/job-types";
import { JobCancelledError, inputError, providerError } from "../job-failure.js";
import type { Provider } from "./provider.js";

/** The `qrcode` options for a QR job (pure). */
export function qrOptions(params: QrGenerateParams): { width: number; margin: number; errorCorrectionLevel: "M" } {
  return { width: params.size, margin: 2, errorCorrectionLevel: "M" };
}

const TOO_LONG = "params.content: is too long to fit in a QR code";

/**
 * Where the render thread loads `qrcode` from: resolved beside this source file, as the import above is under tsx and
 * vitest; in the bundle `import.meta.url` names this source file too (scripts/build-services.mjs), and node_modules is
 * found from there whether or not the sources ship.
 */
const QRCODE_MODULE = createRequire(import.meta.url).resolve("qrcode");

// The render thread, inline (CommonJS, as `eval` workers run) because the image ships the bundle and not this folder.
// It answers with one message: `null` once the file is written, else the library's error message.
const RENDER_PNG_THREAD = `
const { parentPort, workerData } = require("node:worker_threads");
const QRCode = require(workerData.qrcodeModule);
QRCode.toFile(workerData.output, workerData.content, workerData.options).then(
  () => parentPort.postMessage(null),
  (error) => parentPort.postMessage(String((error && error.message) || error)),
);
`;

/**
 * Writes the PNG on a worker thread: pngjs fills and deflates up to 4096 x 4096 x 4 bytes synchronously, 1.5-3.7 s
 * that on the event loop would stall every other job's cancel, progress and heartbeat.
 * @throws JobFailure INPUT_ERROR for content beyond a QR code's capacity, PROVIDER_ERROR if the thread fails;
 *   JobCancelledError when `signal` fires (the thread is terminated).
 */
function renderPngOffThread(output: string, params: QrGenerateParams, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new JobCancelledError());
    const thread = new Worker(RENDER_PNG_THREAD, {
      eval: true,
      workerData: { qrcodeModule: QRCODE_MODULE, output, content: params.content, options: { ...qrOptions(params), type: "png" } },
    });
    const settle = (error?: Error) => {
      signal.removeEventListener("abort", onAbort);
      if (error) reject(error);
      else resolve();
    };
    const onAbort = () => {
      void thread.terminate();
      settle(new JobCancelledError());
    };
    signal.addEventListener("abort", onAbort, { once: true });
    // The only way the library fails on validated params is content beyond a QR code's capacity.
    thread.once("message", (failure: string | null) => settle(failure === null ? undefined : inputError(TOO_LONG)));
    thread.once("error", () => settle(providerError("the QR code could not be rendered")));
    // After the message, or after an error: a no-op then (a promise settles once).
    thread.once("exit", () => settle(providerError("the QR code could not be rendered")));
  });
}

/** `qr.generate`: a QR code image, rendered by the `qrcode` library (no input, no ffmpeg). */
export const qrGenerateProvider: Provider<QrGenerateParams> = {
  type: "qr.generate",
  async run({ params, workDir, signal }) {
    const output = path.join(workDir, `output.${params.format}`);
    if (params.format === "svg") {
      // An SVG is text (module runs as paths) whatever its size: tens of milliseconds at most, on the event loop.
      const svg = await QRCode.toString(params.content, { ...qrOptions(params), type: "svg" }).catch(() => {
        throw inputError(TOO_LONG);
      });
      await writeFile(output, svg);
    } else {
      await renderPngOffThread(output, params, signal);
    }
    return {
      path: output,
      extension: params.format,
      contentType: params.format === "svg" ? "image/svg+xml" : "image/png",
      metadata: { durationMs: null, width: params.size, height: params.size },
    };
  },
};
