import { createContext, useCallback, useContext, useEffect, useState, type ReactNode } from "react";
import { ApiError, api, onUnauthorized, request } from "./api";
import { BASE } from "./router";
import type { Me, SessionUser } from "./types";

/**
 * Who is signed in. Sign-up, sign-in and sign-out go through Better Auth's `/auth/*` endpoints (proxied by the
 * gateway, same origin), which set or clear the HttpOnly `rb_session` cookie; the API then resolves the cookie to
 * {userId, orgId, plan, role} on `/me`.
 */
interface SessionState {
  status: "loading" | "signed-out" | "signed-in";
  me?: Me;
  user?: SessionUser;
  refresh: () => Promise<void>;
  signIn: (email: string, password: string) => Promise<void>;
  /** `landOn`: the dashboard path the confirmation link returns to (an invitation being answered), else Billing. */
  signUp: (name: string, email: string, password: string, landOn?: string) => Promise<void>;
  signOut: () => Promise<void>;
}

/**
 * Where a confirmation link lands (Better Auth redirects there once it is followed, adding `?error=TOKEN_EXPIRED` or
 * `?error=INVALID_TOKEN` when the link is bad): Billing, where the credits it releases show, under the banner that
 * says what went wrong (components/EmailConfirmationBanner.tsx).
 */
export const EMAIL_CONFIRMATION_CALLBACK_URL = `${BASE}/billing`;

const SessionContext = createContext<SessionState | undefined>(undefined);

export function SessionProvider({ children }: { children: ReactNode }) {
  const [state, setState] = useState<Pick<SessionState, "status" | "me" | "user">>({ status: "loading" });

  const refresh = useCallback(async () => {
    try {
      const [me, session] = await Promise.all([
        api.get<Me>("/me"),
        request<{ user?: SessionUser } | null>("GET", "/auth/get-session").catch(() => null),
      ]);
      setState({ status: "signed-in", me, ...(session?.user ? { user: session.user } : {}) });
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) setState({ status: "signed-out" });
      else throw error;
    }
  }, []);

  useEffect(() => {
    refresh().catch(() => setState({ status: "signed-out" }));
    return onUnauthorized(() => setState({ status: "signed-out" }));
  }, [refresh]);

  const signIn = async (email: string, password: string) => {
    await request("POST", "/auth/sign-in/email", { email, password, rememberMe: true });
    await refresh();
  };
  const signUp = async (name: string, email: string, password: string, landOn?: string) => {
    await request("POST", "/auth/sign-up/email", { name, email, password, callbackURL: landOn ? `${BASE}${landOn}` : EMAIL_CONFIRMATION_CALLBACK_URL });
    await refresh();
  };
  const signOut = async () => {
    await request("POST", "/auth/sign-out", {});
    setState({ status: "signed-out" });
  };

  return <SessionContext.Provider value={{ ...state, refresh, signIn, signUp, signOut }}>{children}</SessionContext.Provider>;
}

export function useSession(): SessionState {
  const value = useContext(SessionContext);
  if (!value) throw new Error("useSession outside SessionProvider");
  return value;
}
