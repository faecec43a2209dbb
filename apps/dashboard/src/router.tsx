import { createContext, useContext, useEffect, useState, type AnchorHTMLAttributes, type MouseEvent, type ReactNode } from "react";

/**
 * A small History API router: the dashboard has a dozen fixed routes, which does not justify a routing library.
 * Paths are app-relative ("/jobs/job_1"); the `/app` base is added and removed here only.
 */
export const BASE = "/app";

const RouterContext = createContext<{ path: string; search: string; navigate: (to: string, options?: { replace?: boolean }) => void }>({
  path: "/",
  search: "",
  navigate: () => undefined,
});

let navigatedInApp = false;

/** True once the user has moved between pages inside the app (not on the first page load). */
export function hasNavigated(): boolean {
  return navigatedInApp;
}

const currentPath = () => {
  const path = window.location.pathname.startsWith(BASE) ? window.location.pathname.slice(BASE.length) : window.location.pathname;
  return path === "" ? "/" : path;
};

export function Router({ children }: { children: ReactNode }) {
  const [location, setLocation] = useState({ path: currentPath(), search: window.location.search });
  useEffect(() => {
    const onPop = () => {
      navigatedInApp = true;
      setLocation({ path: currentPath(), search: window.location.search });
    };
    window.addEventListener("popstate", onPop);
    return () => window.removeEventListener("popstate", onPop);
  }, []);
  const navigate = (to: string, options: { replace?: boolean } = {}) => {
    navigatedInApp = true;
    const url = new URL(BASE + to, window.location.origin);
    if (options.replace) window.history.replaceState(null, "", url);
    else window.history.pushState(null, "", url);
    setLocation({ path: currentPath(), search: url.search });
    window.scrollTo(0, 0);
  };
  return <RouterContext.Provider value={{ ...location, navigate }}>{children}</RouterContext.Provider>;
}

export function useRouter() {
  return useContext(RouterContext);
}

/** Matches "/jobs/:jobId" against a path; returns the params or undefined. */
export function matchPath(pattern: string, path: string): Record<string, string> | undefined {
  const patternParts = pattern.split("/").filter(Boolean);
  const pathParts = path.split("/").filter(Boolean);
  if (patternParts.length !== pathParts.length) return undefined;
  const params: Record<string, string> = {};
  for (const [index, part] of patternParts.entries()) {
    const actual = pathParts[index]!;
    if (part.startsWith(":")) params[part.slice(1)] = decodeURIComponent(actual);
    else if (part !== actual) return undefined;
  }
  return params;
}

/** An anchor that navigates without a page load (modifier clicks still open a new tab). */
export function Link({ to, children, ...rest }: { to: string; children: ReactNode } & AnchorHTMLAttributes<HTMLAnchorElement>) {
  const { navigate } = useRouter();
  const onClick = (event: MouseEvent<HTMLAnchorElement>) => {
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    navigate(to);
  };
  return (
    <a href={BASE + to} onClick={onClick} {...rest}>
      {children}
    </a>
  );
}
