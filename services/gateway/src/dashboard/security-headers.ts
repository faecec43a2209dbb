/**
 * Response headers for every dashboard response. The app is fully bundled (no CDN, no inline scripts or styles),
 * so the policy allows only this origin; result previews come from `/outputs/*` on the public URL, which is this
 * origin unless the gateway sits behind a proxy under another name, hence the public origin is listed too.
 */
export function dashboardSecurityHeaders(publicUrl: string): Record<string, string> {
  const publicOrigin = new URL(publicUrl).origin;
  const self = `'self' ${publicOrigin}`;
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
