import { describe, expect, it } from "vitest";
import { fieldsFromSchema, initialValues, labelFor, paramsFromValues, type ObjectJsonSchema } from "../src/schema-form.js";

// The shapes GET /job-types serves (transcode and qr.generate, trimmed).
const transcode: ObjectJsonSchema = {
  type: "object",
  properties: {
    codec: { default: "h264", description: "Video codec", type: "string", enum: ["h264", "h265", "vp9", "av1"] },
    crf: { default: 23, description: "Constant rate factor", type: "integer", minimum: 0, maximum: 63 },
    width: { description: "Output width in pixels (even)", type: "integer", minimum: 16, maximum: 7680, multipleOf: 2 },
    fps: { description: "Output frame rate", type: "number", minimum: 1, maximum: 120 },
  },
};
const qr: ObjectJsonSchema = {
  type: "object",
  properties: {
    content: { type: "string", minLength: 1, maxLength: 2000, description: "Text or URL to encode" },
    format: { default: "png", type: "string", enum: ["png", "svg"] },
    transparent: { type: "boolean", default: false },
  },
  required: ["content"],
};

describe("job params form generated from the job type's JSON Schema", () => {
  it("makes a select for enums, a number input for integers and numbers, text for strings and a checkbox for booleans", () => {
    expect(fieldsFromSchema(transcode).map((field) => [field.name, field.kind])).toEqual([
      ["codec", "select"],
      ["crf", "number"],
      ["width", "number"],
      ["fps", "number"],
    ]);
    expect(fieldsFromSchema(qr).map((field) => [field.name, field.kind, field.required])).toEqual([
      ["content", "text", true],
      ["format", "select", false],
      ["transparent", "checkbox", false],
    ]);
  });

  it("labels fields in words, carries descriptions and bounds, and starts from the schema defaults", () => {
    const [codec, crf, width] = fieldsFromSchema(transcode);
    expect(codec).toMatchObject({ label: "Codec", description: "Video codec", options: ["h264", "h265", "vp9", "av1"], defaultValue: "h264" });
    expect(crf).toMatchObject({ label: "CRF", integer: true, min: 0, max: 63, defaultValue: "23" });
    expect(width).toMatchObject({ min: 16, max: 7680, multipleOf: 2, defaultValue: "" });
    expect(initialValues(fieldsFromSchema(transcode))).toEqual({ codec: "h264", crf: "23", width: "", fps: "" });
    expect(labelFor("audioBitrate")).toBe("Audio bitrate");
    expect(labelFor("fontSize")).toBe("Font size");
  });

  it("turns values into typed params and leaves empty optional fields to the API's defaults", () => {
    const fields = fieldsFromSchema(transcode);
    expect(paramsFromValues(fields, { codec: "vp9", crf: "30", width: "", fps: "29.97" })).toEqual({ ok: true, params: { codec: "vp9", crf: 30, fps: 29.97 } });
  });

  it("names the field and the rule when a value is out of range, not whole, not a number or missing", () => {
    const result = paramsFromValues(fieldsFromSchema(transcode), { codec: "mpeg2", crf: "99", width: "100.5", fps: "fast" });
    expect(result).toEqual({
      ok: false,
      errors: {
        codec: "Codec must be one of h264, h265, vp9, av1",
        crf: "CRF must be at most 63",
        width: "Width must be a whole number",
        fps: "FPS must be a number",
      },
    });
    expect(paramsFromValues(fieldsFromSchema(qr), { content: "  ", format: "png", transparent: false })).toEqual({ ok: false, errors: { content: "Content is required" } });
    expect(paramsFromValues(fieldsFromSchema(transcode), { codec: "h264", crf: "23", width: "641", fps: "" })).toEqual({ ok: false, errors: { width: "Width must be an even number" } });
  });

  it("sends a checkbox only when it differs from the default", () => {
    const fields = fieldsFromSchema(qr);
    expect(paramsFromValues(fields, { content: "hello", format: "svg", transparent: false })).toEqual({ ok: true, params: { content: "hello", format: "svg" } });
    expect(paramsFromValues(fields, { content: "hello", format: "png", transparent: true })).toEqual({ ok: true, params: { content: "hello", format: "png", transparent: true } });
  });

  it("shows a type without params as an empty form", () => {
    expect(fieldsFromSchema({ type: "object", properties: {} })).toEqual([]);
    expect(fieldsFromSchema(undefined)).toEqual([]);
  });
});
