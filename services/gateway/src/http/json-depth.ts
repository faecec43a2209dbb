/**
 * The deepest nesting of arrays and objects a JSON request body may have. Real bodies (a job spec with its params
 * and metadata, an MCP tool call around it) stay under ten levels; without a limit a 300 KB body of 150,000 nested
 * arrays parses, then overflows the stack in `JSON.stringify` and the protobuf Struct encoder (SECURITY-AUDIT
 * finding 20).
 */
export const MAX_JSON_DEPTH = 64;

const QUOTE = 0x22; // "
const BACKSLASH = 0x5c; // \
const OPEN_BRACKET = 0x5b; // [
const CLOSE_BRACKET = 0x5d; // ]
const OPEN_BRACE = 0x7b; // {
const CLOSE_BRACE = 0x7d; // }

/**
 * True when `text` opens more than `maxDepth` arrays/objects inside one another. One pass over the characters with
 * no allocation, so it costs microseconds per kilobyte and runs before `JSON.parse` does any work. Brackets inside
 * strings (escaped quotes included) do not count. It answers for well-formed JSON; on malformed text it may answer
 * either way, and the parser that runs next refuses that text anyway.
 */
export function exceedsJsonDepth(text: string, maxDepth = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (inString) {
      if (code === BACKSLASH) index++; // whatever follows a backslash is part of the escape, never a closing quote
      else if (code === QUOTE) inString = false;
    } else if (code === QUOTE) {
      inString = true;
    } else if (code === OPEN_BRACKET || code === OPEN_BRACE) {
      if (++depth > maxDepth) return true;
    } else if (code === CLOSE_BRACKET || code === CLOSE_BRACE) {
      depth--;
    }
  }
  return false;
}
