/**
 * Where to go after signing in: the `next` query parameter, when it is an app path. Anything else (another origin,
 * a protocol-relative `//host`, backslashes that some browsers read as slashes, `..` climbing out of the app, the
 * auth pages themselves) is ignored, so a crafted sign-in link cannot send people off the site. Pure, so it is
 * unit-tested (test/next-path.test.ts).
 */
const AUTH_PATHS = new Set(["/sign-in", "/sign-up", "/forgot-password", "/reset-password"]);

export function safeNextPath(value: string | null | undefined): string | undefined {
  if (!value || value.length > 2000) return undefined;
  if (!value.startsWith("/") || value.startsWith("//") || value.includes("\\")) return undefined;
  if ([...value].some((character) => character.charCodeAt(0) < 0x20)) return undefined;
  const probe = "https://renderbus.invalid";
  let resolved: URL;
  try {
    resolved = new URL(`/app${value}`, probe);
  } catch {
    return undefined;
  }
  if (resolved.origin !== probe || !resolved.pathname.startsWith("/app/")) return undefined;
  const path = resolved.pathname.slice("/app".length);
  if (AUTH_PATHS.has(path) || path === "/") return undefined;
  return path + resolved.search;
}

/** The `?next=` to add to the sign-in link for the page a signed-out person tried to open ("" when not worth it). */
export function nextQuery(path: string, search: string): string {
  const target = safeNextPath(path + search);
  return target && target !== "/jobs" ? `?next=${encodeURIComponent(target)}` : "";
}
