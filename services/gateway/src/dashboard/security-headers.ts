/**
 * Response headers for every dashboard response. The app is fully bundled (no CDN, no inline scripts or styles),
 * so the policy allows only this origin; result previews come from `/outputs/*` on the public URL, which is this
 * origin unless the gateway sits behind a proxy under another name, hence the public origin is listed too, and
 * `outputOrigins`: where `/outputs/*` redirects to (the S3 store's origin, docs/operations.md#object-storage), since
 * a redirected image or video must be allowed at its final origin too.
 */
export function dashboardSecurityHeaders(publicUrl: string, outputOrigins: readonly string[] = []): Record<string, string> {
  const publicOrigin = new URL(publicUrl).origin;
  const self = ["'self'", publicOrigin, ...outputOrigins].join(" ");
  const contentSecurityPolicy = [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    `img-src ${self} data: blob:`,
    `media-src ${self} blob:`,
    "connect-src 'self'",
    "font-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join("; ");
  return {
    "Content-Security-Policy": contentSecurityPolicy,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "strict-origin-when-cross-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=(), payment=()",
  };
}

/**
 * Headers for the API reference at `/docs` (openapi/openapi.routes.ts): the dashboard's headers with a policy of its
 * own. The renderer (Scalar's standalone bundle, served from this origin) runs under `script-src 'self'` without
 * 'unsafe-eval', but it injects its component styles as <style> elements at run time, so this page alone allows
 * `style-src 'unsafe-inline'`. With scripts limited to this origin, injected CSS can restyle the page but not run
 * code. `connect-src` admits the public origin for the document and the "Test request" client.
 */
export function apiReferenceSecurityHeaders(publicUrl: string): Record<string, string> {
  const publicOrigin = new URL(publicUrl).origin;
  const contentSecurityPolicy = [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self' data:",
    `connect-src 'self' ${publicOrigin}`,
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
  return { ...dashboardSecurityHeaders(publicUrl), "Content-Security-Policy": contentSecurityPolicy };
}
