import { Fragment, useEffect, useState, type ReactNode } from "react";
import { Link, Router, matchPath, useRouter } from "./router";
import { SessionProvider, useSession } from "./session";
import { nextQuery, safeNextPath } from "./next-path";
import { ErrorMessage, Loading } from "./components/ui";
import { OrgSwitcher } from "./components/OrgSwitcher";
import { EmailConfirmationBanner } from "./components/EmailConfirmationBanner";
import { SignInPage, SignUpPage } from "./pages/AuthPages";
import { ForgotPasswordPage, ResetPasswordPage } from "./pages/PasswordResetPages";
import { JobsPage } from "./pages/JobsPage";
import { NewJobPage } from "./pages/NewJobPage";
import { JobDetailPage } from "./pages/JobDetailPage";
import { BatchesPage, BatchDetailPage } from "./pages/BatchesPages";
import { ApiKeysPage } from "./pages/ApiKeysPage";
import { WebhooksPage } from "./pages/WebhooksPage";
import { BillingPage } from "./pages/BillingPage";
import { MembersPage } from "./pages/MembersPage";
import { InvitationPage } from "./pages/InvitationPage";

export function App() {
  return (
    <Router>
      <SessionProvider>
        <Shell />
      </SessionProvider>
    </Router>
  );
}

/** Signing in and up: signed out only, a signed-in visitor moves on (to `?next=`, else Jobs). */
const AUTH_PATHS = new Set(["/sign-in", "/sign-up"]);
/**
 * A forgotten password: open signed in or not. A reset link may be opened in a browser signed in to any account,
 * and must not be bounced to Jobs before it is used.
 */
const PASSWORD_RESET_PATHS = new Set(["/forgot-password", "/reset-password"]);

const NAV: { to: string; label: string; section?: string }[] = [
  { to: "/jobs", label: "Jobs" },
  { to: "/batches", label: "Batches" },
  { to: "/billing", label: "Billing" },
  { to: "/settings/api-keys", label: "API keys", section: "Settings" },
  { to: "/settings/webhooks", label: "Webhooks", section: "Settings" },
  { to: "/settings/members", label: "Members", section: "Settings" },
];

function Shell() {
  const session = useSession();
  const { path, search, navigate } = useRouter();
  const isAuthPage = AUTH_PATHS.has(path);
  const isPasswordResetPage = PASSWORD_RESET_PATHS.has(path);
  const isPublic = isAuthPage || isPasswordResetPage;

  useEffect(() => {
    // A signed-out visitor (say, opening an invitation link) comes back to the page they asked for once signed in.
    if (session.status === "signed-out" && !isPublic) navigate(`/sign-in${nextQuery(path, search)}`, { replace: true });
    if (session.status === "signed-in" && (isAuthPage || path === "/")) {
      const next = isAuthPage ? safeNextPath(new URLSearchParams(search).get("next")) : undefined;
      // A link landing on the bare /app/ keeps its query: a bad confirmation link's `?error=` is for the banner.
      navigate(next ?? `/jobs${isAuthPage ? "" : search}`, { replace: true });
    }
  }, [session.status, isAuthPage, isPublic, path, search, navigate]);

  if (session.status === "loading") {
    return (
      <main id="main" className="centered">
        <Loading label="Loading Renderbus" />
      </main>
    );
  }
  if (isPublic || session.status === "signed-out") {
    return <main id="main" className="auth-layout">{publicPageFor(path)}</main>;
  }
  return <SignedInLayout>{routeFor(path)}</SignedInLayout>;
}

/** The page of a public path; signed out, any other path shows sign-in (while the redirect to it happens). */
function publicPageFor(path: string): ReactNode {
  if (path === "/sign-up") return <SignUpPage />;
  if (path === "/forgot-password") return <ForgotPasswordPage />;
  if (path === "/reset-password") return <ResetPasswordPage />;
  return <SignInPage />;
}

function routeFor(path: string): ReactNode {
  if (path === "/jobs") return <JobsPage />;
  if (path === "/jobs/new") return <NewJobPage />;
  const job = matchPath("/jobs/:jobId", path);
  if (job) return <JobDetailPage key={job.jobId} jobId={job.jobId!} />;
  if (path === "/batches") return <BatchesPage />;
  const batch = matchPath("/batches/:batchId", path);
  if (batch) return <BatchDetailPage key={batch.batchId} batchId={batch.batchId!} />;
  if (path === "/billing") return <BillingPage />;
  if (path === "/settings/api-keys") return <ApiKeysPage />;
  if (path === "/settings/webhooks") return <WebhooksPage />;
  if (path === "/settings/members") return <MembersPage />;
  const invitation = matchPath("/invitations/:invitationId", path);
  if (invitation) return <InvitationPage key={invitation.invitationId} invitationId={invitation.invitationId!} />;
  return (
    <>
      <h1>Page not found</h1>
      <p>
        There is nothing at this address. <Link to="/jobs">Go to your jobs</Link>.
      </p>
    </>
  );
}

function SignedInLayout({ children }: { children: ReactNode }) {
  const session = useSession();
  const { path } = useRouter();
  const [menuOpen, setMenuOpen] = useState(false);
  const [signOutError, setSignOutError] = useState<unknown>();
  useEffect(() => setMenuOpen(false), [path]);
  // Plan and role can change between pages (an upgrade, a role change); re-read them on every navigation.
  const { refresh } = session;
  useEffect(() => {
    refresh().catch(() => undefined);
  }, [path, refresh]);
  const isCurrent = (to: string) => path === to || (to !== "/" && path.startsWith(`${to}/`));
  let lastSection: string | undefined;

  return (
    <div className="layout">
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <Link to="/jobs" className="brand">
          <span className="brand-mark" aria-hidden="true">
            R
          </span>
          Renderbus
        </Link>
        <button type="button" className="button menu-toggle" aria-expanded={menuOpen} aria-controls="primary-nav" onClick={() => setMenuOpen(!menuOpen)}>
          Menu
        </button>
        <div className="account">
          <OrgSwitcher />
          <span className="account-email">{session.user?.email ?? session.me?.userId}</span>
          <span className="plan-pill">{session.me?.plan} plan</span>
          <button
            type="button"
            className="button button-quiet"
            onClick={() => session.signOut().catch((error: unknown) => setSignOutError(error))}
          >
            Sign out
          </button>
        </div>
      </header>
      <nav id="primary-nav" className={`sidenav${menuOpen ? " open" : ""}`} aria-label="Main">
        <ul>
          {NAV.map((item) => {
            const heading = item.section && item.section !== lastSection ? item.section : undefined;
            lastSection = item.section;
            return (
              <li key={item.to}>
                {heading ? <span className="nav-section">{heading}</span> : null}
                <Link to={item.to} aria-current={isCurrent(item.to) ? "page" : undefined}>
                  {item.label}
                </Link>
              </li>
            );
          })}
        </ul>
      </nav>
      <main id="main" className="content" tabIndex={-1}>
        <ErrorMessage error={signOutError} title="Sign out failed" />
        <EmailConfirmationBanner />
        {/* Pages load their data once; a different org (switched, joined, or left) must load it afresh. */}
        <Fragment key={session.me?.orgId}>{children}</Fragment>
      </main>
    </div>
  );
}
