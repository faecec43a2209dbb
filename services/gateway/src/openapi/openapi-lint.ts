import type { OpenApiDocument } from "./openapi-document.js";

interface Operation {
  summary?: string;
  description?: string;
  responses?: Record<string, { content?: Record<string, { schema?: { $ref?: string } }> }>;
  "x-codeSamples"?: { label: string; source: string }[];
}

/**
 * What a reader of /docs, a client or an SDK generator would miss in the document, beyond what `redocly lint` checks
 * (openapi-redocly.test.ts): operations without a summary or description, without a 4xx response, with an error
 * response (4xx or 5xx) that does not carry the error body of docs/concepts.md#errors, with a success response
 * without a body schema, or without a curl sample. An empty list means every operation is documented. (Every route
 * of the table declares its success body, so the type checker already refuses a route whose body has no schema.)
 */
export function undocumentedProblems(document: Pick<OpenApiDocument, "paths">): string[] {
  const problems: string[] = [];
  for (const [path, operations] of Object.entries(document.paths)) {
    for (const [method, value] of Object.entries(operations)) {
      const operation = value as Operation;
      const name = `${method.toUpperCase()} ${path}`;
      if (!operation.summary?.trim()) problems.push(`${name}: no summary`);
      if (!operation.description?.trim()) problems.push(`${name}: no description`);
      const responses = Object.entries(operation.responses ?? {});
      if (!responses.some(([status]) => status.startsWith("4"))) problems.push(`${name}: no 4xx response`);
      for (const [status, response] of responses) {
        if (status.startsWith("4") || status.startsWith("5")) {
          if (response.content?.["application/json"]?.schema?.$ref !== "#/components/schemas/Error") problems.push(`${name}: ${status} does not use the error schema`);
        } else if (status.startsWith("2")) {
          const media = Object.values(response.content ?? {});
          if (media.length === 0 || media.some((content) => !content.schema)) problems.push(`${name}: ${status} has no body schema`);
        }
      }
      if (!operation["x-codeSamples"]?.some((sample) => sample.source.startsWith("curl"))) problems.push(`${name}: no curl sample`);
    }
  }
  return problems;
}
