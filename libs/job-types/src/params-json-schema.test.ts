import { Ajv2020 } from "ajv/dist/2020.js";
import { describe, expect, it } from "vitest";
import { JOB_TYPE_NAMES, JOB_TYPES, parseJobParams, type JobTypeName } from "./index.js";

/** Every combination of the given values per field (undefined: the field left out). */
function combinations(fields: Record<string, unknown[]>): Record<string, unknown>[] {
  return Object.entries(fields).reduce<Record<string, unknown>[]>(
    (partial, [name, values]) => partial.flatMap((params) => values.map((value) => (value === undefined ? params : { ...params, [name]: value }))),
    [{}],
  );
}

const CASES: Record<JobTypeName, Record<string, unknown>[]> = {
  transcode: combinations({
    codec: [undefined, "h264", "h265", "vp9", "av1", "mpeg2"],
    format: [undefined, "mp4", "webm", "mkv", "mov"],
    crf: [undefined, 0, 51, 52, 63, 64, 23.5],
    width: [undefined, 640, 641, 14, 7682],
  }),
  thumbnail: combinations({ timestamp: [undefined, 0, 2.5, -1], width: [undefined, 16, 17, 7680, 7682], height: [undefined, 320, 321], format: [undefined, "png", "gif"] }),
  "audio.extract": combinations({ format: [undefined, "mp3", "flac"], bitrate: [undefined, 32, 31, 512, 513, 128.5] }),
  "extract.metadata": [{}, { anything: 1 }],
  "qr.generate": combinations({ content: [undefined, "", "hello", "x".repeat(2001)], format: [undefined, "svg", "jpg"], size: [undefined, 63, 64, 4096, 4097] }),
  "watermark.add": combinations({ text: [undefined, "", "hi"], position: [undefined, "center", "middle"], opacity: [undefined, 0, 1.5], padding: [undefined, 1000, 1001] }),
  "caption.burn": combinations({ fontSize: [undefined, 7, 8, 200, 201], position: [undefined, "top", "left"], extra: [undefined, true] }),
};

describe("the params JSON Schema each job type publishes (GET /job-types, MCP get_job_type_schema)", () => {
  const ajv = new Ajv2020({ strict: false, allErrors: true });

  it.each(JOB_TYPE_NAMES)("accepts exactly the params %s's validator accepts", (type) => {
    const validate = ajv.compile(JOB_TYPES[type].paramsJsonSchema);
    const disagreements = CASES[type]
      .map((params) => ({ params, validator: parseJobParams(type, params).ok, schema: validate(params) }))
      .filter((outcome) => outcome.validator !== outcome.schema);
    expect(disagreements).toEqual([]);
    // The cases reach both answers, so agreeing means something.
    const outcomes = new Set(CASES[type].map((params) => parseJobParams(type, params).ok));
    expect(type === "extract.metadata" || outcomes.size === 2).toBe(true);
  });

  it("states the transcode rules a client can check before submitting: even sizes, crf up to 51 for h264/h265, webm with vp9/av1, mov with h264/h265", () => {
    const validate = ajv.compile(JOB_TYPES.transcode.paramsJsonSchema);
    expect(validate({ width: 641 })).toBe(false);
    expect(validate({ crf: 60 })).toBe(false);
    expect(validate({ codec: "vp9", crf: 60 })).toBe(true);
    expect(validate({ format: "webm" })).toBe(false);
    expect(validate({ format: "webm", codec: "av1" })).toBe(true);
    expect(validate({ format: "mov", codec: "vp9" })).toBe(false);
  });
});
