import type { OpenApiDocument } from "./openapi-document.js";

interface Operation {
  summary?: string;
  description?: string;
  responses?: Record<string, { content?: Record<string, { schema?: { $ref?: string } }> }>;
}

/**
 * What a client or SDK generator would miss in the document: operations without a summary or description, or
 * without a 4xx response carrying the error schema. An empty list means every operation is documented.
 */
export function undocumentedProblems(document: Pick<OpenApiDocument, "paths">): string[] {
  const problems: string[] = [];
  for (const [path, operations] of Object.entries(document.paths)) {
    for (const [method, value] of Object.entries(operations)) {
      const operation = value as Operation;
      const name = `${method.toUpperCase()} ${path}`;
      if (!operation.summary?.trim()) problems.push(`${name}: no summary`);
      if (!operation.description?.trim()) problems.push(`${name}: no description`);
      const clientErrors = Object.entries(operation.responses ?? {}).filter(([status]) => status.startsWith("4"));
      if (clientErrors.length === 0) problems.push(`${name}: no 4xx response`);
      for (const [status, response] of clientErrors) {
        if (response.content?.["application/json"]?.schema?.$ref !== "#/components/schemas/Error") problems.push(`${name}: ${status} does not use the error schema`);
      }
    }
  }
  return problems;
}
