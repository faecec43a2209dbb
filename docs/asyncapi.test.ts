import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import specs from "@asyncapi/specs";
import { Ajv } from "ajv";
import addFormatsModule from "ajv-formats";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { STREAMS } from "@renderbus/bus";
import { JOB_EVENT_NAMES } from "../services/jobs/src/job/job-messages.js";

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;
const repoRoot = resolve(import.meta.dirname, "..");
const asyncapi = parse(readFileSync(join(repoRoot, "docs", "asyncapi.yaml"), "utf8")) as AsyncApi;

interface Schema {
  $ref?: string;
  type?: string;
  required?: string[];
  properties?: Record<string, Schema>;
  items?: Schema;
  "x-proto"?: string;
}
interface AsyncApi {
  asyncapi: string;
  channels: Record<string, { address: string; messages: Record<string, { $ref: string }>; "x-jetstream-stream": string }>;
  operations: Record<string, { action: string; channel: { $ref: string }; messages: { $ref: string }[] }>;
  components: { messages: Record<string, { payload: { $ref: string }; headers: { $ref: string } }>; schemas: Record<string, Schema> };
  "x-streams": Record<string, { subjects: string[] }>;
}

interface ProtoField {
  name: string;
  /** `map` for a map field (a JSON object, absent when empty, like a repeated field). */
  type: string;
  optional: boolean;
  repeated: boolean;
}
interface ProtoMessage {
  name: string;
  fields: ProtoField[];
  /** Declared in an events.proto file. */
  inEventsFile: boolean;
  /** Documented with a `Subject:` comment: published on a subject of its own, even if also part of another event. */
  hasSubject: boolean;
}

const PROTO_FILES = ["jobs/v1/jobs.proto", "jobs/v1/events.proto", "auth/v1/events.proto", "webhooks/v1/webhooks.proto"];
const camelCase = (name: string) => name.replace(/_([a-z])/g, (_, letter: string) => letter.toUpperCase());

/** The messages of the proto files, with proto3 JSON (camelCase) field names: enough of a parser for this check. */
function readProtoMessages(): Map<string, ProtoMessage> {
  const messages = new Map<string, ProtoMessage>();
  for (const file of PROTO_FILES) {
    const text = readFileSync(join(repoRoot, "proto", "renderbus", file), "utf8");
    for (const match of text.matchAll(/((?:\/\/[^\n]*\n)*)message (\w+) \{([^}]*)\}/g)) {
      const fields = [...match[3]!.matchAll(/^\s*(optional |repeated )?(map<[\w\s,]+>|[\w.]+) (\w+) = \d+;/gm)].map((field) => ({
        name: camelCase(field[3]!),
        type: field[2]!.startsWith("map<") ? "map" : field[2]!,
        optional: field[1] === "optional ",
        repeated: field[1] === "repeated ",
      }));
      messages.set(match[2]!, { name: match[2]!, fields, inEventsFile: file.endsWith("events.proto"), hasSubject: /Subject:/.test(match[1]!) });
    }
  }
  return messages;
}

const proto = readProtoMessages();
/** Messages used as a field of another message (JobLimits, JobResult, ...) are parts of events, not events. */
const fieldTypes = new Set([...proto.values()].flatMap((message) => message.fields.map((field) => field.type)));
const eventMessages = [...proto.values()].filter((message) => message.hasSubject || (message.inEventsFile && !fieldTypes.has(message.name)));

/** Follows a local `$ref` (`#/components/schemas/X`). */
function resolveRef(ref: string): unknown {
  expect(ref.startsWith("#/")).toBe(true);
  return ref
    .slice(2)
    .split("/")
    .reduce<unknown>((node, key) => (node as Record<string, unknown> | undefined)?.[key.replace(/~1/g, "/").replace(/~0/g, "~")], asyncapi);
}

/** The shape rules of AsyncAPI 3.0 this document relies on (a subset of the official schema, checked with ajv). */
const structure = {
  type: "object",
  required: ["asyncapi", "info", "channels", "operations", "components"],
  properties: {
    asyncapi: { const: "3.0.0" },
    info: { type: "object", required: ["title", "version"], properties: { title: { type: "string" }, version: { type: "string" } } },
    servers: { type: "object", additionalProperties: { type: "object", required: ["host", "protocol"], properties: { protocol: { const: "nats" } } } },
    channels: {
      type: "object",
      additionalProperties: {
        type: "object",
        required: ["address", "messages"],
        properties: { address: { type: "string" }, messages: { type: "object", additionalProperties: { type: "object", required: ["$ref"] } } },
      },
    },
    operations: {
      type: "object",
      additionalProperties: {
        type: "object",
        required: ["action", "channel"],
        properties: { action: { enum: ["send", "receive"] }, channel: { type: "object", required: ["$ref"] }, messages: { type: "array", items: { required: ["$ref"] } } },
      },
    },
    components: {
      type: "object",
      properties: {
        messages: { type: "object", additionalProperties: { type: "object", required: ["payload"], properties: { contentType: { const: "application/json" } } } },
        schemas: { type: "object" },
      },
    },
  },
};

describe("the event contract (docs/asyncapi.yaml)", () => {
  it("validates against the official AsyncAPI 3.0.0 JSON Schema (@asyncapi/specs)", () => {
    // The spec bundles the draft-07 meta-schema itself, so ajv must not add its own copy.
    const validate = addFormats(new Ajv({ allErrors: true, strict: false, meta: false, validateSchema: false })).compile(specs.schemas["3.0.0"] as object);
    expect(validate(asyncapi), JSON.stringify(validate.errors, null, 1)).toBe(true);
    // A control: AsyncAPI 2's `publish` is not an AsyncAPI 3 action.
    const broken = structuredClone(asyncapi);
    Object.values(broken.operations)[0]!.action = "publish";
    expect(validate(broken)).toBe(false);
  });

  it("is an AsyncAPI 3.0 document whose every $ref resolves", () => {
    const validate = new Ajv({ allErrors: true, strict: false }).compile(structure);
    expect(validate(asyncapi), JSON.stringify(validate.errors)).toBe(true);
    const refs: string[] = [];
    const collect = (node: unknown): void => {
      if (Array.isArray(node)) node.forEach(collect);
      else if (node && typeof node === "object") {
        for (const [key, value] of Object.entries(node)) {
          if (key === "$ref") refs.push(value as string);
          else collect(value);
        }
      }
    };
    collect(asyncapi);
    expect(refs.length).toBeGreaterThan(20);
    for (const ref of refs) expect(resolveRef(ref), ref).toBeDefined();
    for (const [id, operation] of Object.entries(asyncapi.operations)) {
      // AsyncAPI 3: an operation's messages must belong to its channel.
      for (const message of operation.messages) expect(message.$ref.startsWith(`${operation.channel.$ref}/messages/`), id).toBe(true);
    }
  });

  it("describes every event message of the proto definitions, and no message the protos do not define", () => {
    const documented = Object.keys(asyncapi.components.messages).sort();
    expect(documented).toEqual(eventMessages.map((message) => message.name).sort());
  });

  it("gives every payload schema exactly the proto fields (proto3 JSON names), required unless optional or repeated", () => {
    const schemas = Object.entries(asyncapi.components.schemas).filter(([, schema]) => schema["x-proto"]);
    // Every message a payload reaches (JobResult, JobLimits, ...) is described too.
    expect(schemas.length).toBeGreaterThan(eventMessages.length);
    for (const [name, schema] of schemas) {
      const message = proto.get(name);
      expect(message, `${name} is defined in proto`).toBeDefined();
      expect(schema["x-proto"]!.endsWith(`.${name}`)).toBe(true);
      expect(Object.keys(schema.properties ?? {}).sort(), name).toEqual(message!.fields.map((field) => field.name).sort());
      expect([...(schema.required ?? [])].sort(), `${name} required`).toEqual(message!.fields.filter((field) => !field.optional && !field.repeated && field.type !== "map").map((field) => field.name).sort());
      for (const field of message!.fields) {
        const property = schema.properties![field.name]!;
        const item = field.repeated ? property.items! : property;
        if (field.repeated) expect(property.type, `${name}.${field.name}`).toBe("array");
        if (proto.has(field.type)) expect(item.$ref, `${name}.${field.name}`).toBe(`#/components/schemas/${field.type}`);
        else expect(item.type, `${name}.${field.name}`).toBe({ string: "string", int32: "integer", int64: "integer", bool: "boolean", "google.protobuf.Struct": "object", map: "object" }[field.type]);
      }
    }
    for (const [name, message] of Object.entries(asyncapi.components.messages)) {
      expect(message.payload.$ref).toBe(`#/components/schemas/${name}`);
    }
  });

  it("puts every channel on the JetStream stream the services declare, with the same subjects", () => {
    const declared = Object.fromEntries(Object.values(STREAMS).map((stream) => [stream.name, [...stream.subjects]]));
    expect(Object.fromEntries(Object.entries(asyncapi["x-streams"]).map(([name, stream]) => [name, stream.subjects]))).toEqual(declared);
    for (const channel of Object.values(asyncapi.channels)) {
      const subjects = declared[channel["x-jetstream-stream"]];
      expect(subjects, channel.address).toBeDefined();
      expect(subjects!.some((subject) => channel.address.startsWith(subject.replace(/>$/, ""))), channel.address).toBe(true);
    }
  });

  it("has a channel for every job event subject the jobs service publishes", () => {
    const addresses = Object.values(asyncapi.channels).map((channel) => channel.address);
    for (const name of Object.values(JOB_EVENT_NAMES)) expect(addresses).toContain(`jobs.events.${name}`);
    expect(addresses).toContain("jobs.events.batch.created");
  });
});
