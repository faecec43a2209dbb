/** The only paths the gateway forwards to the auth service: Better Auth's routes and the OAuth well-known documents. */
export const AUTH_PROXY_PREFIXES = ["/auth/", "/.well-known/"] as const;

// Encoded slashes and backslashes: `new URL` leaves `%2f` alone, but a server that decodes before routing would see a
// `..` segment the check below never saw. No auth route has them, so they are refused rather than interpreted.
const AMBIGUOUS_PATH = /%2f|%5c|\\|%00/i;

/**
 * The auth service URL a request for `requestTarget` is forwarded to, or undefined when the target is not one of the
 * auth service's own paths (the caller answers 404).
 *
 * The upstream is never the request target resolved against the auth service's URL: an absolute-form target
 * (`http://other-host/auth/x`) or dot segments (`/auth/../x`, `/auth/%2e%2e/x`) would then reach any host or path
 * (SECURITY-AUDIT finding 1). Instead the path alone is taken, normalised the way every URL parser does (dot and
 * `%2e` segments resolved), and kept only if the result is still on the auth service's origin and still under
 * `/auth/` or `/.well-known/`. The checks run on the URL that is fetched, so what passes is what is sent.
 * @param requestTarget the raw request target (path and query) as the client sent it.
 * @param authHttpUrl the auth service's base URL (AUTH_HTTP_URL).
 */
export function authUpstreamUrl(requestTarget: string, authHttpUrl: string): URL | undefined {
  const queryStart = requestTarget.indexOf("?");
  const path = queryStart === -1 ? requestTarget : requestTarget.slice(0, queryStart);
  const query = queryStart === -1 ? "" : requestTarget.slice(queryStart);
  // Only a path that literally starts with one of the prefixes: this also refuses absolute-form (`http://...`) and
  // scheme-relative (`//host/...`) targets, and any spelling of the prefix the router decoded (`/%61uth/`).
  if (!startsWithAuthPrefix(path) || AMBIGUOUS_PATH.test(path) || path.includes("#")) return undefined;
  const origin = new URL(authHttpUrl).origin;
  let target: URL;
  try {
    target = new URL(`${path}${query}`, origin);
  } catch {
    return undefined;
  }
  if (target.origin !== origin || !startsWithAuthPrefix(target.pathname)) return undefined;
  target.hash = "";
  return target;
}

function startsWithAuthPrefix(path: string): boolean {
  return AUTH_PROXY_PREFIXES.some((prefix) => path.startsWith(prefix));
}
