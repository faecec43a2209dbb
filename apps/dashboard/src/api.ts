/**
 * The REST API client. Same origin, so the browser sends the `rb_session` cookie (HttpOnly, never readable here)
 * and the Origin header the gateway's CSRF check wants on writes. Every failure becomes an ApiError whose message
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

export async function request<T>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> {
  let response: Response;
  try {
    response = await fetch(path, {
      method,
      credentials: "same-origin",
      headers: { accept: "application/json", ...(body !== undefined ? { "content-type": "application/json" } : {}), ...headers },
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
