import type { JobTypeName } from "@renderbus/job-types";
import { audioExtractProvider } from "./audio-extract.js";
import { captionBurnProvider } from "./caption-burn.js";
import { extractMetadataProvider } from "./extract-metadata.js";
import type { InputProbe } from "../run-job/download-inputs.js";
import type { Provider } from "./provider.js";
import { qrGenerateProvider } from "./qr-generate.js";
import { thumbnailProvider } from "./thumbnail.js";
import { transcodeProvider } from "./transcode.js";
import { watermarkAddProvider } from "./watermark-add.js";

/** The provider of every job type. */
export const PROVIDERS: Record<JobTypeName, Provider<never>> = {
  transcode: transcodeProvider,
  thumbnail: thumbnailProvider,
  "audio.extract": audioExtractProvider,
  "extract.metadata": extractMetadataProvider,
  "qr.generate": qrGenerateProvider,
  "watermark.add": watermarkAddProvider,
  "caption.burn": captionBurnProvider,
};

/** How the inputs of a job type are probed before its provider runs (download-inputs.ts). */
export function inputProbeFor(type: JobTypeName): InputProbe {
  return PROVIDERS[type].describesInputs ? "ffprobe" : "header-first";
}

export type { Provider, ProviderContext, ProviderOutput } from "./provider.js";
