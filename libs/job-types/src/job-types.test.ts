import { describe, expect, it } from "vitest";
import { JOB_TYPE_NAMES, JOB_TYPES, isJobTypeName, jobTypeAvailableOn, parseJobParams, validateInputs } from "./index.js";

describe("job types", () => {
  it("defines the seven job types of docs/concepts.md", () => {
    expect(Object.keys(JOB_TYPES).sort()).toEqual([...JOB_TYPE_NAMES].sort());
    expect(JOB_TYPE_NAMES).toHaveLength(7);
  });

  it("offers watermark.add and caption.burn only to plans with all job types", () => {
    expect(jobTypeAvailableOn("watermark.add", "basic")).toBe(false);
    expect(jobTypeAvailableOn("caption.burn", "basic")).toBe(false);
    expect(jobTypeAvailableOn("caption.burn", "all")).toBe(true);
    for (const type of ["transcode", "thumbnail", "audio.extract", "extract.metadata", "qr.generate"] as const) {
      expect(jobTypeAvailableOn(type, "basic")).toBe(true);
    }
  });

  it("recognises job type names", () => {
    expect(isJobTypeName("transcode")).toBe(true);
    expect(isJobTypeName("explode")).toBe(false);
  });

  it("publishes a strict JSON Schema of params where defaulted fields are optional", () => {
    const schema = JOB_TYPES.transcode.paramsJsonSchema as { type: string; additionalProperties: boolean; properties: Record<string, unknown>; required?: string[] };
    expect(schema.type).toBe("object");
    expect(schema.additionalProperties).toBe(false);
    expect(Object.keys(schema.properties)).toContain("crf");
    expect(schema.required ?? []).not.toContain("crf");
    expect((JOB_TYPES["qr.generate"].paramsJsonSchema as { required: string[] }).required).toEqual(["content"]);
  });
});

describe("parseJobParams", () => {
  it("fills in defaults", () => {
    expect(parseJobParams("transcode", {})).toEqual({ ok: true, params: { codec: "h264", crf: 23, preset: "veryfast", format: "mp4", audioBitrate: 128 } });
    expect(parseJobParams("extract.metadata", undefined)).toEqual({ ok: true, params: {} });
  });

  it("names the field in the message when a number is out of range", () => {
    expect(parseJobParams("transcode", { crf: 60 })).toEqual({ ok: false, message: "params.crf: must be <= 51" });
    expect(parseJobParams("transcode", { codec: "vp9", crf: 60 }).ok).toBe(true);
    expect(parseJobParams("thumbnail", { timestamp: -1 })).toEqual({ ok: false, message: "params.timestamp: must be >= 0" });
  });

  it("rejects unknown params, wrong types, bad enums and missing required fields", () => {
    expect(parseJobParams("thumbnail", { colour: "red" })).toEqual({ ok: false, message: "params.colour: is not allowed" });
    expect(parseJobParams("transcode", { crf: "high" })).toEqual({ ok: false, message: "params.crf: must be a number" });
    expect(parseJobParams("transcode", { format: "avi" })).toEqual({ ok: false, message: "params.format: must be one of mp4, webm, mkv, mov" });
    expect(parseJobParams("qr.generate", {})).toEqual({ ok: false, message: "params.content: is required" });
    expect(parseJobParams("transcode", { width: 641 })).toEqual({ ok: false, message: "params.width: must be an even number" });
  });

  it("refuses codecs the chosen container cannot hold", () => {
    expect(parseJobParams("transcode", { format: "webm" })).toEqual({ ok: false, message: "params.codec: must be vp9 or av1 when format is webm" });
    expect(parseJobParams("transcode", { format: "mov", codec: "av1" })).toEqual({ ok: false, message: "params.codec: must be h264 or h265 when format is mov" });
  });

  it("requires a watermark text when no image input is given", () => {
    expect(parseJobParams("watermark.add", {}, { source: "https://a.example/v.mp4" })).toEqual({ ok: false, message: "params.text: is required when no image input is given" });
    expect(parseJobParams("watermark.add", {}, { source: "https://a.example/v.mp4", image: "https://a.example/logo.png" }).ok).toBe(true);
    expect(parseJobParams("watermark.add", { text: "hi" }, { source: "https://a.example/v.mp4" }).ok).toBe(true);
  });
});

describe("validateInputs", () => {
  it("accepts http and https URLs for declared inputs", () => {
    expect(validateInputs("caption.burn", { source: "https://a.example/v.mp4", subtitles: "http://a.example/s.srt" })).toEqual({ ok: true });
    expect(validateInputs("qr.generate", {})).toEqual({ ok: true });
    expect(validateInputs("watermark.add", { source: "https://a.example/v.mp4" })).toEqual({ ok: true });
  });

  it("accepts upload ids and refuses other prefixed strings", () => {
    expect(validateInputs("transcode", { source: "upload_01JBQ0000000000000000000AB" })).toEqual({ ok: true });
    expect(validateInputs("transcode", { source: "upload_../../etc/passwd" }).ok).toBe(false);
    expect(validateInputs("transcode", { source: "job_01JBQ0000000000000000000AB" }).ok).toBe(false);
  });

  it("rejects missing, unknown and non-http inputs", () => {
    expect(validateInputs("caption.burn", { source: "https://a.example/v.mp4" })).toEqual({ ok: false, message: "inputs.subtitles: is required" });
    expect(validateInputs("transcode", { source: "https://a.example/v.mp4", extra: "https://x" })).toEqual({ ok: false, message: "inputs.extra: is not an input of transcode" });
    expect(validateInputs("transcode", { source: "file:///etc/passwd" })).toEqual({ ok: false, message: "inputs.source: must be an http or https URL or an upload id (upload_...)" });
    expect(validateInputs("transcode", { source: 42 })).toEqual({ ok: false, message: "inputs.source: must be an http or https URL or an upload id (upload_...)" });
    expect(validateInputs("transcode", ["x"])).toEqual({ ok: false, message: "inputs: must be an object" });
  });
});
