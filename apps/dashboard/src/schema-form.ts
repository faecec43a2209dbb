/**
 * Turns a job type's params JSON Schema (GET /job-types) into form fields, and form values back into `params`.
 * Pure: no DOM, no React, so the mapping is unit-tested on its own (test/schema-form.test.ts).
 */

/** The subset of JSON Schema the job types use: flat objects of strings, numbers, integers, booleans and enums. */
export interface JsonSchemaProperty {
  type?: string | string[];
  enum?: unknown[];
  default?: unknown;
  description?: string;
  title?: string;
  minimum?: number;
  maximum?: number;
  multipleOf?: number;
  minLength?: number;
  maxLength?: number;
}

export interface ObjectJsonSchema {
  type?: string;
  properties?: Record<string, JsonSchemaProperty>;
  required?: string[];
}

export type FormField =
  | { kind: "select"; name: string; label: string; description?: string; required: boolean; options: string[]; defaultValue: string }
  | { kind: "number"; name: string; label: string; description?: string; required: boolean; integer: boolean; min?: number; max?: number; multipleOf?: number; defaultValue: string }
  | { kind: "text"; name: string; label: string; description?: string; required: boolean; minLength?: number; maxLength?: number; defaultValue: string }
  | { kind: "checkbox"; name: string; label: string; description?: string; required: false; defaultValue: boolean };

export type FormValues = Record<string, string | boolean>;

// Abbreviations people know in capitals.
const ACRONYMS = new Set(["crf", "fps", "url", "id", "qr", "srt", "vtt", "svg", "png", "jpg"]);

/** "audioBitrate" -> "Audio bitrate", "fontSize" -> "Font size", "crf" -> "CRF". */
export function labelFor(name: string): string {
  const words = name
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/[_.-]+/g, " ")
    .toLowerCase()
    .split(" ")
    .map((word) => (ACRONYMS.has(word) ? word.toUpperCase() : word));
  const text = words.join(" ");
  return text.charAt(0).toUpperCase() + text.slice(1);
}

const primaryType = (property: JsonSchemaProperty): string | undefined =>
  Array.isArray(property.type) ? property.type.find((type) => type !== "null") : property.type;

/** One field per schema property, in schema order; unknown shapes become free text so nothing is hidden. */
export function fieldsFromSchema(schema: ObjectJsonSchema | undefined): FormField[] {
  const required = new Set(schema?.required ?? []);
  return Object.entries(schema?.properties ?? {}).map(([name, property]): FormField => {
    const common = {
      name,
      label: property.title ?? labelFor(name),
      ...(property.description ? { description: property.description } : {}),
      required: required.has(name),
    };
    const type = primaryType(property);
    if (Array.isArray(property.enum)) {
      const options = property.enum.map(String);
      return { kind: "select", ...common, options, defaultValue: property.default !== undefined ? String(property.default) : common.required ? (options[0] ?? "") : "" };
    }
    if (type === "integer" || type === "number") {
      return {
        kind: "number",
        ...common,
        integer: type === "integer",
        ...(property.minimum !== undefined ? { min: property.minimum } : {}),
        ...(property.maximum !== undefined ? { max: property.maximum } : {}),
        ...(property.multipleOf !== undefined ? { multipleOf: property.multipleOf } : {}),
        defaultValue: typeof property.default === "number" ? String(property.default) : "",
      };
    }
    if (type === "boolean") return { kind: "checkbox", ...common, required: false, defaultValue: property.default === true };
    return {
      kind: "text",
      ...common,
      ...(property.minLength !== undefined ? { minLength: property.minLength } : {}),
      ...(property.maxLength !== undefined ? { maxLength: property.maxLength } : {}),
      defaultValue: typeof property.default === "string" ? property.default : "",
    };
  });
}

/** The form's starting values: each field's schema default (empty when none). */
export function initialValues(fields: FormField[]): FormValues {
  return Object.fromEntries(fields.map((field) => [field.name, field.defaultValue]));
}

export type ParamsResult = { ok: true; params: Record<string, unknown> } | { ok: false; errors: Record<string, string> };

/**
 * Form values -> `params`. Empty optional fields are left out (the API applies the schema default); numbers are
 * parsed and range-checked so the user sees the mistake beside the field before a round trip.
 */
export function paramsFromValues(fields: FormField[], values: FormValues): ParamsResult {
  const params: Record<string, unknown> = {};
  const errors: Record<string, string> = {};
  for (const field of fields) {
    const raw = values[field.name];
    if (field.kind === "checkbox") {
      if (raw !== field.defaultValue) params[field.name] = raw === true;
      continue;
    }
    const text = typeof raw === "string" ? raw.trim() : "";
    if (text === "") {
      if (field.required) errors[field.name] = `${field.label} is required`;
      continue;
    }
    if (field.kind === "number") {
      const number = Number(text);
      if (!Number.isFinite(number)) errors[field.name] = `${field.label} must be a number`;
      else if (field.integer && !Number.isInteger(number)) errors[field.name] = `${field.label} must be a whole number`;
      else if (field.min !== undefined && number < field.min) errors[field.name] = `${field.label} must be at least ${field.min}`;
      else if (field.max !== undefined && number > field.max) errors[field.name] = `${field.label} must be at most ${field.max}`;
      else if (field.multipleOf !== undefined && number % field.multipleOf !== 0)
        errors[field.name] = field.multipleOf === 2 ? `${field.label} must be an even number` : `${field.label} must be a multiple of ${field.multipleOf}`;
      else params[field.name] = number;
      continue;
    }
    if (field.kind === "select" && !field.options.includes(text)) {
      errors[field.name] = `${field.label} must be one of ${field.options.join(", ")}`;
      continue;
    }
    if (field.kind === "text" && field.maxLength !== undefined && text.length > field.maxLength) {
      errors[field.name] = `${field.label} must be at most ${field.maxLength} characters`;
      continue;
    }
    params[field.name] = text;
  }
  return Object.keys(errors).length > 0 ? { ok: false, errors } : { ok: true, params };
}
