/**
 * The REST API client. Same origin, so the browser sends the `rb_session` cookie (HttpOnly, never readable here)
 * and the Origin header the gateway's CSRF check wants on writes; writes also send the session's CSRF token. Every failure becomes an ApiError whose message
 * can be shown to a person as is.
 */
export class ApiError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status: number,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

type Listener = () => void;
const unauthorizedListeners = new Set<Listener>();

/** Called whenever the API answers 401: the session has expired or was signed out elsewhere. */
export function onUnauthorized(listener: Listener): () => void {
  unauthorizedListeners.add(listener);
  return () => unauthorizedListeners.delete(listener);
}

const FRIENDLY: Record<string, string> = {
  RATE_LIMITED: "Too many requests right now. Wait a moment and try again.",
  SERVICE_UNAVAILABLE: "Renderbus is temporarily unavailable. Try again in a moment.",
  INTERNAL_ERROR: "Something went wrong on our side. Try again; if it keeps happening, contact support.",
};

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/** The session's CSRF token, which the gateway hands out in the script-readable `rb_csrf` cookie. */
function csrfToken(): string | undefined {
  for (const part of document.cookie.split(";")) {
    const [name, ...value] = part.trim().split("=");
    if (name === "rb_csrf") return value.join("=");
  }
  return undefined;
}

/**
 * The `X-CSRF-Token` header every state-changing API request carries: the gateway refuses cookie-authenticated
 * writes without it. The gateway sets the cookie on any signed-in API response; a write before any such response
 * (rare: right after signing in) fetches `/me` first to get it.
 */
export async function csrfHeader(method: string, path: string): Promise<Record<string, string>> {
  if (SAFE_METHODS.has(method) || path.startsWith("/auth/")) return {};
  let token = csrfToken();
  if (token === undefined) {
    await fetch("/me", { credentials: "same-origin", headers: { accept: "application/json" } }).catch(() => undefined);
    token = csrfToken();
  }
  return token === undefined ? {} : { "x-csrf-token": token };
}

export async function request<T>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> {
  let response: Response;
  try {
    const csrf = await csrfHeader(method, path);
    response = await fetch(path, {
      method,
      credentials: "same-origin",
      headers: { accept: "application/json", ...(body !== undefined ? { "content-type": "application/json" } : {}), ...csrf, ...headers },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
  } catch {
    throw new ApiError("NETWORK_ERROR", "Could not reach Renderbus. Check your connection and try again.", 0);
  }
  const text = await response.text();
  let parsed: unknown = undefined;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  if (!response.ok) {
    const error = (parsed as { error?: { code?: string; message?: string } } | undefined)?.error;
    const betterAuthMessage = (parsed as { message?: string } | undefined)?.message;
    const code = error?.code ?? (parsed as { code?: string } | undefined)?.code ?? `HTTP_${response.status}`;
    const message = FRIENDLY[code] ?? error?.message ?? betterAuthMessage ?? `Request failed (HTTP ${response.status}).`;
    if (response.status === 401 && !path.startsWith("/auth/")) unauthorizedListeners.forEach((listener) => listener());
    throw new ApiError(code, message, response.status);
  }
  return parsed as T;
}

export const api = {
  get: <T>(path: string) => request<{ data: T }>("GET", path).then((body) => body.data),
  page: <T>(path: string) => request<{ data: T[]; nextCursor: string | null }>("GET", path),
  post: <T>(path: string, body?: unknown, headers?: Record<string, string>) => request<{ data: T }>("POST", path, body ?? {}, headers).then((b) => b.data),
  patch: <T>(path: string, body: unknown) => request<{ data: T }>("PATCH", path, body).then((b) => b.data),
  delete: <T>(path: string) => request<{ data: T }>("DELETE", path).then((b) => b.data),
};

/** Builds `path?k=v` from the set values only. */
export function withQuery(path: string, query: Record<string, string | number | undefined | null>): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value !== undefined && value !== null && value !== "") params.set(name, String(value));
  const text = params.toString();
  return text ? `${path}?${text}` : path;
}

/** The message to show for any thrown value. */
export function messageOf(error: unknown): string {
  if (error instanceof ApiError) return error.message;
  if (error instanceof Error) return error.message;
  return "Something went wrong.";
}
