import fc from "fast-check";

/**
 * Generators of invalid requests, derived from the live OpenAPI document. Every request they make is wrong in at
 * least one way the API must refuse (bad credential, bad id, bad query value, bad body, bad idempotency key), so
 * the only acceptable answers are 4xx with the documented error body, and nothing may change.
 */

export interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  propertyNames?: JsonSchema;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  enum?: unknown[];
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
  format?: string;
}

interface Parameter {
  name: string;
  in: "query" | "path" | "header";
  required?: boolean;
  schema: JsonSchema;
}

export interface Operation {
  method: string;
  path: string;
  operationId: string;
  parameters: Parameter[];
  bodySchema?: JsonSchema;
  /** Answers a Server-Sent Events stream (the stream routes ignore unknown query parameters). */
  eventStream: boolean;
  /** The error codes the document lists under each status of this operation (the examples of its error responses). */
  errorCodes: Record<string, string[]>;
}

export interface FuzzRequest {
  operationId: string;
  /** Which kind of wrongness this request carries (for the per-kind count). */
  kind: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
  /** A 2xx is acceptable: an event stream given an unknown query parameter (every other route refuses one). */
  mayReadOk: boolean;
  /** The answer the request must get when it is precise (bad credentials: 401). */
  expectStatus?: number;
  /** The operation's documented error codes by status (Operation.errorCodes). */
  errorCodes: Record<string, string[]>;
}

export function operationsOf(document: {
  paths: Record<string, Record<string, { operationId: string; parameters?: Parameter[]; requestBody?: { content: Record<string, { schema: JsonSchema }> }; responses?: Record<string, { content?: Record<string, { examples?: Record<string, { value?: { error?: { code?: string } } }> }> }> }>>;
}): Operation[] {
  return Object.entries(document.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, operation]) => ({
      method: method.toUpperCase(),
      path,
      operationId: operation.operationId,
      parameters: operation.parameters ?? [],
      eventStream: Object.values(operation.responses ?? {}).some((response) => response.content?.["text/event-stream"] !== undefined),
      errorCodes: Object.fromEntries(
        Object.entries(operation.responses ?? {})
          .filter(([status]) => Number(status) >= 400)
          .map(([status, response]) => [status, Object.values(response.content?.["application/json"]?.examples ?? {}).flatMap((example) => example.value?.error?.code ?? [])]),
      ),
      ...(operation.requestBody ? { bodySchema: operation.requestBody.content["application/json"]!.schema } : {}),
    })),
  );
}

const typesOf = (schema: JsonSchema): string[] =>
  schema.anyOf ? schema.anyOf.flatMap(typesOf) : schema.type === undefined ? [] : Array.isArray(schema.type) ? schema.type : [schema.type];

/** Strings that stress parsers: any unicode, control characters, lone surrogates, RTL marks, emoji. */
const nastyString = (maxLength: number) =>
  fc.oneof(
    fc.string({ unit: "grapheme", maxLength }),
    fc.string({ unit: "binary", maxLength }),
    fc.constantFrom("\u0000", "\ud800", "\u202e\u0041", "🦄".repeat(3), "' OR 1=1 --", "${jndi:ldap://x}", "../../etc/passwd", "%00", "\r\n\r\n"),
  );

/** A JSON text nested `depth` deep in arrays: wrong for every property here (none takes nested arrays). */
const deepArrays = fc.integer({ min: 50, max: 3000 }).map((depth) => `${"[".repeat(depth)}1${"]".repeat(depth)}`);

/** A JSON value whose JSON type is not one `schema` allows. */
function wrongType(schema: JsonSchema): fc.Arbitrary<unknown> {
  const allowed = new Set(typesOf(schema).map((type) => (type === "integer" ? "number" : type)));
  const candidates: [string, fc.Arbitrary<unknown>][] = [
    ["string", nastyString(50)],
    ["number", fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }))],
    ["boolean", fc.boolean()],
    ["null", fc.constant(null)],
    ["array", fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 4 })],
    ["object", fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 })],
  ];
  return fc.oneof(...candidates.filter(([type]) => !allowed.has(type)).map(([, arbitrary]) => arbitrary));
}

/** A JSON value `schema` refuses, or undefined when the schema accepts anything (`{}`). */
export function invalidFor(schema: JsonSchema): fc.Arbitrary<unknown> | undefined {
  const types = typesOf(schema);
  if (types.length === 0) return undefined;
  const options: fc.Arbitrary<unknown>[] = [wrongType(schema)];
  const strings = schema.anyOf ? schema.anyOf.find((branch) => branch.type === "string") : types.includes("string") ? schema : undefined;
  if (strings) {
    if (strings.maxLength !== undefined) {
      options.push(fc.integer({ min: strings.maxLength + 1, max: strings.maxLength + 3000 }).chain((length) => fc.string({ unit: "grapheme-ascii", minLength: length, maxLength: length })));
      options.push(fc.constant("é".repeat(strings.maxLength + 1)));
    }
    if ((strings.minLength ?? 0) > 0) options.push(fc.constant(""));
    if (strings.enum) options.push(nastyString(30).filter((value) => !strings.enum!.includes(value)));
    if (strings.format === "uri") options.push(fc.constantFrom("not a url", "://", "http//x", "🦄🦄", "javascript"));
  }
  if (types.includes("integer") || types.includes("number")) {
    if (schema.minimum !== undefined) options.push(fc.integer({ min: -1e9, max: schema.minimum - 1 }));
    if (schema.maximum !== undefined && schema.maximum < Number.MAX_SAFE_INTEGER) options.push(fc.integer({ min: schema.maximum + 1, max: schema.maximum + 1e9 }));
    if (types.includes("integer")) options.push(fc.double({ min: 1.01, max: 99.99, noNaN: true }).filter((value) => !Number.isInteger(value)));
  }
  if (types.includes("array") && schema.items) {
    if ((schema.minItems ?? 0) > 0) options.push(fc.constant([]));
    const badItem = invalidFor(schema.items);
    if (badItem) options.push(fc.tuple(fc.constant(exampleFor(schema.items)), badItem).map(([good, bad]) => [good, bad]));
  }
  if (types.includes("object")) {
    const broken = brokenObject(schema, exampleFor(schema) as Record<string, unknown>);
    if (broken) options.push(broken);
  }
  return fc.oneof(...options);
}

/** A minimal value that fits `schema` in shape (used as the base that breakers then break). */
export function exampleFor(schema: JsonSchema): unknown {
  const type = typesOf(schema)[0];
  switch (type) {
    case "object":
      return Object.fromEntries((schema.required ?? []).map((name) => [name, exampleFor(schema.properties![name]!)]));
    case "array":
      return Array.from({ length: schema.minItems ?? 0 }, () => exampleFor(schema.items ?? {}));
    case "string":
      return schema.enum ? schema.enum[0] : "x".repeat(Math.max(1, schema.minLength ?? 1));
    case "integer":
    case "number":
      return schema.minimum ?? 1;
    case "boolean":
      return true;
    default:
      return null;
  }
}

/** An object `schema` refuses: a required field gone, an unknown field, or one field made invalid. */
function brokenObject(schema: JsonSchema, base: Record<string, unknown>): fc.Arbitrary<unknown> | undefined {
  const breakers: fc.Arbitrary<unknown>[] = [];
  const properties = Object.entries(schema.properties ?? {});
  for (const name of schema.required ?? []) {
    breakers.push(fc.constant(Object.fromEntries(Object.entries(base).filter(([key]) => key !== name))));
  }
  if (schema.additionalProperties === false) {
    breakers.push(
      fc
        .tuple(
          // `__proto__` is dropped by the JSON parser (poisoning protection), which would leave a valid body.
          nastyString(40).filter((key) => key !== "__proto__" && !(key in (schema.properties ?? {}))),
          fc.jsonValue({ maxDepth: 3 }),
        )
        .map(([key, value]) => ({ ...base, [key]: value })),
    );
  }
  if (schema.propertyNames?.maxLength !== undefined) {
    breakers.push(fc.constant({ ...base, ["k".repeat(schema.propertyNames.maxLength + 1)]: exampleFor((schema.additionalProperties as JsonSchema) ?? {}) }));
  }
  if (typeof schema.additionalProperties === "object") {
    const badValue = invalidFor(schema.additionalProperties);
    if (badValue) breakers.push(badValue.map((value) => ({ ...base, key: value })));
  }
  for (const [name, property] of properties) {
    const bad = invalidFor(property);
    if (bad) breakers.push(bad.map((value) => ({ ...base, [name]: value })));
  }
  return breakers.length > 0 ? fc.oneof(...breakers) : undefined;
}

/** The sum of the maxLength of a schema's string properties, at any depth: a bound on what they add to a body. */
function longestStrings(schema: JsonSchema): number {
  const own = typesOf(schema).includes("string") ? (schema.maxLength ?? 0) : 0;
  return own + Object.values(schema.properties ?? {}).reduce((sum, property) => sum + longestStrings(property), 0) + (schema.anyOf ?? []).reduce((sum, branch) => sum + longestStrings(branch), 0);
}

/** Lone surrogates cannot be percent-encoded; a URL carries U+FFFD in their place, as browsers do. */
const encodeId = (id: string) => encodeURIComponent(id.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, "\ufffd"));

/** Ids that name nothing: random, unicode, wrong prefix, right prefix with junk, too long, traversal, injection. */
const badId = fc.oneof(
  nastyString(60).filter((id) => id.length > 0),
  fc.constantFrom("job_", "batch_", "key_", "del_", "org_", "usr_").chain((prefix) => fc.stringMatching(/^[0-9A-Z]{26}$/).map((rest) => prefix + rest)),
  fc.constantFrom("job_00000000000000000000000000", "0", "-1", "null", "undefined", "..", ".", "%2e%2e", "' OR '1'='1", "job_%00", "[object Object]"),
  fc.integer({ min: 101, max: 3000 }).map((length) => "job_" + "A".repeat(length)),
);

/** Query values a parameter refuses; strings travel as text so "wrong type" means unparsable text. */
function badQueryValue(schema: JsonSchema): fc.Arbitrary<string> | undefined {
  const options: fc.Arbitrary<string>[] = [];
  const types = typesOf(schema);
  if (types.includes("integer")) {
    // Number() coercion reads "", " " and "0x10" as numbers (0, 0, 16); those are accepted, so not generated here.
    options.push(fc.constantFrom("abc", "1.5", "-1", "1e400", "NaN", "Infinity", "[]", "{}", "true", "١٢"));
    if (schema.minimum !== undefined) options.push(fc.integer({ min: -1e6, max: schema.minimum - 1 }).map(String));
    if (schema.maximum !== undefined && schema.maximum < Number.MAX_SAFE_INTEGER) options.push(fc.integer({ min: schema.maximum + 1, max: schema.maximum + 1e6 }).map(String));
  }
  if (types.includes("string")) {
    if (schema.enum) options.push(nastyString(40).filter((value) => !schema.enum!.includes(value)));
    if (schema.maxLength !== undefined) options.push(fc.integer({ min: schema.maxLength + 1, max: schema.maxLength + 1500 }).map((length) => "q".repeat(length)));
    if ((schema.minLength ?? 0) > 0) options.push(fc.constant(""));
  }
  return options.length > 0 ? fc.oneof(...options) : undefined;
}

/** Cursors that were never issued: junk, base64 of junk JSON, a cursor-looking string. */
const badCursor = fc.oneof(
  nastyString(200).filter((value) => value.length > 0),
  fc.jsonValue({ maxDepth: 3 }).map((value) => Buffer.from(JSON.stringify(value) ?? "null").toString("base64url")),
  fc.jsonValue({ maxDepth: 2 }).map((value) => Buffer.from(JSON.stringify(value) ?? "null").toString("base64")),
  fc.constantFrom("eyJ0IjotMSwiaWQiOiJ4In0", "eyJjcmVhdGVkQXQiOiJub3QgYSBudW1iZXIifQ", "AAAA", "%%%", "null", "0"),
  // Shaped like a real (createdAt, id) cursor, with values SQL cannot take.
  fc.constantFrom([-8.9e22, "job_x"], [1e300, "job_x"], [1.5, "job_x"], [1, "job_\u0000"], [1, "j".repeat(5000)]).map((value) => Buffer.from(JSON.stringify(value)).toString("base64url")),
);

/** Authorization headers that are not a live credential. */
function badAuthHeaders(validKey: string): fc.Arbitrary<Record<string, string>> {
  const printable = fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((code) => String.fromCharCode(code)), maxLength: 200 });
  return fc.oneof(
    fc.constant({}),
    fc.constantFrom("Bearer", "Bearer ", "bearer", "Basic dXNlcjpwYXNz", "Token abc", "Bearer null", "Bearer undefined").map((authorization) => ({ authorization })),
    printable.map((token) => ({ authorization: `Bearer ${token}` })),
    fc.stringMatching(/^[A-Za-z0-9_-]{43}$/).map((token) => ({ authorization: `Bearer rb_${token}` })),
    fc.constantFrom(`${validKey}x`, validKey.slice(0, -1), validKey.toUpperCase(), ` ${validKey}`.replace("rb_", "rb-")).map((token) => ({ authorization: `Bearer ${token}` })),
    fc.constant({ authorization: validKey }),
    fc.integer({ min: 1000, max: 7000 }).map((length) => ({ authorization: `Bearer rb_${"a".repeat(length)}` })),
    printable.map((value) => ({ cookie: `rb_session=${value.replace(/[;,]/g, "")}` })),
    fc.constant({ "x-api-key": validKey.slice(0, -2) }),
  );
}

/** An Idempotency-Key the API refuses: too long, or with spaces or non-ASCII (docs/concepts.md#idempotency: printable ASCII, 1-255). */
const badIdempotencyKey = fc.oneof(
  fc.integer({ min: 256, max: 4000 }).map((length) => "k".repeat(length)),
  fc.stringMatching(/^[a-z]{1,10}$/).map((word) => `${word} ${word}`),
  fc.stringMatching(/^[a-z]{1,10}$/).map((word) => `${word}\u00e9`),
  fc.constant("a\tb"),
);

export interface FuzzContext {
  /** A live key of the fuzzed org (only mangled, never sent as is). */
  validKey: string;
  /** The fuzzed org's id, so PATCH /orgs/{orgId} reaches the body validation. */
  orgId: string;
  /** A request body each body-taking operation accepts, the base that breakers break. */
  validBodies: Record<string, unknown>;
}

/** Every invalid request fast-check may build for one operation, by kind. */
export function requestsFor(operation: Operation, context: FuzzContext): fc.Arbitrary<FuzzRequest> {
  const pathParams = operation.parameters.filter((parameter) => parameter.in === "path");
  const queryParams = operation.parameters.filter((parameter) => parameter.in === "query");
  const takesIdempotencyKey = operation.parameters.some((parameter) => parameter.in === "header" && parameter.name === "Idempotency-Key");
  const validBody = context.validBodies[operation.operationId];
  if (operation.bodySchema && validBody === undefined) throw new Error(`no valid body for ${operation.operationId}: add one to validBodies`);
  const realPath = (ids: Record<string, string> = {}) =>
    operation.path.replace(/\{(\w+)\}/g, (_match, name: string) => encodeId(ids[name] ?? (name === "orgId" ? context.orgId : name === "type" ? "qr.generate" : `${name}_unknown`)));
  const authorized = { authorization: `Bearer ${context.validKey}` };
  const jsonHeaders = { ...authorized, "content-type": "application/json" };
  const validBodyText = validBody === undefined ? undefined : JSON.stringify(validBody);
  const base = { operationId: operation.operationId, method: operation.method, mayReadOk: false, errorCodes: operation.errorCodes };
  const kinds: fc.Arbitrary<FuzzRequest>[] = [];

  // Every operation: a credential that is missing, malformed, unknown or a mangled real key, with a valid request.
  kinds.push(
    badAuthHeaders(context.validKey).map((headers) => ({
      ...base,
      kind: "bad-auth",
      path: realPath(),
      headers: { ...headers, ...(validBodyText ? { "content-type": "application/json" } : {}) },
      ...(validBodyText ? { body: validBodyText } : {}),
      expectStatus: 401,
    })),
  );

  if (pathParams.length > 0) {
    kinds.push(
      fc.tuple(fc.constantFrom(...pathParams.map((parameter) => parameter.name)), badId).map(([name, id]) => ({
        ...base,
        kind: "bad-id",
        path: realPath({ [name]: id }),
        headers: validBodyText ? jsonHeaders : authorized,
        ...(validBodyText ? { body: validBodyText } : {}),
      })),
    );
  }

  if (pathParams.length > 0) {
    // Sent as is, not encoded: percent signs that decode to nothing, encoded slashes and NULs.
    kinds.push(
      fc.constantFrom("%", "%zz", "%E0%A4%A", "%2F..%2F", "%00", "a%2Fb", "%C0%AF").map((raw) => ({
        ...base,
        kind: "bad-url",
        path: operation.path.replace(/\{\w+\}/g, raw),
        headers: validBodyText ? jsonHeaders : authorized,
        ...(validBodyText ? { body: validBodyText } : {}),
      })),
    );
  }

  if (queryParams.length > 0) {
    const badParam = fc.oneof(
      ...queryParams.flatMap((parameter) => {
        const values = parameter.name === "cursor" ? badCursor : badQueryValue(parameter.schema);
        return values ? [values.map((value) => [parameter.name, value] as const)] : [];
      }),
      nastyString(20)
        .filter((name) => name.length > 0 && !queryParams.some((parameter) => parameter.name === name))
        .map((name) => [name, "1"] as const),
    );
    kinds.push(
      badParam.map(([name, value]) => ({
        ...base,
        kind: name === "cursor" ? "bad-cursor" : "bad-query",
        path: `${realPath()}?${new URLSearchParams({ [name]: value }).toString()}`,
        headers: authorized,
      })),
    );
  } else {
    // A route without query parameters refuses any (unknown fields are a 400, in the query too); an event stream
    // ignores them.
    kinds.push(
      nastyString(20)
        .filter((name) => name.length > 0)
        .map((name) => ({ ...base, kind: "extra-query", path: `${realPath()}?${new URLSearchParams({ [name]: "1" }).toString()}`, headers: authorized, mayReadOk: operation.eventStream })),
    );
  }

  if (operation.bodySchema) {
    const broken = brokenObject(operation.bodySchema, validBody as Record<string, unknown>)!;
    const bodies = fc.oneof(
      { weight: 6, arbitrary: broken.map((body) => ({ kind: "bad-body", text: JSON.stringify(body) })) },
      { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }).filter((value) => typeof value !== "object" || value === null || Array.isArray(value)).map((value) => ({ kind: "non-object-body", text: JSON.stringify(value) })) },
      {
        weight: 1,
        arbitrary: fc.tuple(deepArrays, fc.constantFrom(undefined, ...Object.keys(operation.bodySchema.properties ?? {}))).map(([nested, property]) => ({
          kind: "deep-nesting",
          text: property === undefined ? nested : JSON.stringify({ ...(validBody as object), [property]: "__NESTED__" }).replace('"__NESTED__"', nested),
        })),
      },
      {
        weight: 1,
        arbitrary: fc.oneof(
          fc.integer({ min: 1, max: validBodyText!.length - 1 }).map((cut) => validBodyText!.slice(0, cut)),
          nastyString(30).map((junk) => `${validBodyText}${junk}x`),
          fc.constantFrom("{", "}", "{'type': 'x'}", "{\"type\":}", "[1,,2]", "\u0000", "NaN", "undefined"),
        ).map((text) => ({ kind: "malformed-json", text })),
      },
      // Past 1 MB and past the longest body the schema allows (a route taking a file inline has a larger limit).
      { weight: 1, arbitrary: fc.constant({ kind: "huge-body", text: JSON.stringify({ ...(validBody as object), padding: "p".repeat(1024 * 1024 + 10 + longestStrings(operation.bodySchema)) }) }) },
    );
    kinds.push(
      bodies.map(({ kind, text }) => ({
        ...base,
        kind,
        path: realPath(),
        headers: jsonHeaders,
        body: text,
        ...(kind === "huge-body" ? { expectStatus: 413 } : {}),
      })),
    );
    kinds.push(
      fc.constantFrom("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/xml").map((contentType) => ({
        ...base,
        kind: "wrong-content-type",
        path: realPath(),
        headers: { ...authorized, "content-type": contentType },
        body: validBodyText!,
      })),
    );
  }

  if (takesIdempotencyKey) {
    kinds.push(
      badIdempotencyKey.map((key) => ({
        ...base,
        kind: "bad-idempotency-key",
        path: realPath(),
        headers: { ...jsonHeaders, "idempotency-key": key },
        body: validBodyText!,
        expectStatus: 400,
      })),
    );
  }
  // Credentials are checked first and cheaply; the other kinds reach deeper, so they get more of the budget.
  return fc.oneof({ weight: 1, arbitrary: kinds[0]! }, ...kinds.slice(1).map((arbitrary) => ({ weight: 3, arbitrary })));
}
