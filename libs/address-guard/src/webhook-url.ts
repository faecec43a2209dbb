/**
 * Why `url` may not receive webhooks, or undefined when it may: an absolute http(s) URL of at most 2048 characters,
 * HTTPS in production, without credentials. The same rule for the org's webhookUrl (auth) and every endpoint
 * (webhook dispatcher); the dispatcher's connect-time guard then refuses private addresses (docs/webhooks.md).
 * @param field the name the message uses for the URL
 */
export function webhookUrlProblem(url: string, { mode, field }: { mode: string; field: string }): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return `${field} must be an absolute URL`;
  }
  if (url.length > 2048) return `${field} must be at most 2048 characters`;
  if (parsed.protocol !== "https:" && parsed.protocol !== "http:") return `${field} must use http or https`;
  if (mode === "production" && parsed.protocol !== "https:") return `${field} must use https in production`;
  if (parsed.username || parsed.password) return `${field} must not contain credentials`;
  return undefined;
}
