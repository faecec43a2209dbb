import type { FormEvent } from "react";
import { Link, useRouter } from "../router";
import { useSession } from "../session";
import { safeNextPath } from "../next-path";
import { passwordChanged } from "../password-reset";
import { ErrorMessage, Notice, PageHeader, useAction } from "../components/ui";

/** The Renderbus name above every page for signing in, signing up and resetting a password. */
export function AuthBrand() {
  return (
    <p className="brand brand-large">
      <span className="brand-mark" aria-hidden="true">
        R
      </span>
      Renderbus
    </p>
  );
}

/** The `?next=` this page was opened with, kept when moving between sign-in and sign-up. */
export function useNext(): { next: string | undefined; query: string } {
  const { search } = useRouter();
  const next = safeNextPath(new URLSearchParams(search).get("next"));
  return { next, query: next ? `?next=${encodeURIComponent(next)}` : "" };
}

/** Invitees arrive here from a shared link; the invitation only opens for the address it was sent to. */
function InvitationNotice({ next }: { next: string | undefined }) {
  if (!next?.startsWith("/invitations/")) return null;
  return <Notice>To see your invitation, sign in or create an account with the email address it was sent to. You come back to it afterwards.</Notice>;
}

export function SignInPage() {
  const session = useSession();
  const { search } = useRouter();
  const { next, query } = useNext();
  const { busy, error, run } = useAction();
  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    await run(() => session.signIn(String(form.get("email")), String(form.get("password"))));
  };
  return (
    <div className="auth-card">
      <AuthBrand />
      <PageHeader title="Sign in" />
      {passwordChanged(search) ? <Notice tone="success">Password changed. Sign in with your new password.</Notice> : null}
      <InvitationNotice next={next} />
      <form onSubmit={(event) => void submit(event)} className="form">
        <ErrorMessage error={error} />
        <div className="field">
          <label htmlFor="email">Email</label>
          <input id="email" name="email" type="email" autoComplete="email" required />
        </div>
        <div className="field">
          <label htmlFor="password">Password</label>
          <input id="password" name="password" type="password" autoComplete="current-password" required />
        </div>
        <button type="submit" className="button button-primary" disabled={busy}>
          {busy ? "Signing in…" : "Sign in"}
        </button>
      </form>
      <p>
        <Link to={`/forgot-password${query}`}>Forgot your password?</Link>
      </p>
      <p>
        New to Renderbus? <Link to={`/sign-up${query}`}>Create an account</Link>
      </p>
    </div>
  );
}

export function SignUpPage() {
  const session = useSession();
  const { next, query } = useNext();
  const { busy, error, run } = useAction();
  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    await run(() => session.signUp(String(form.get("name")), String(form.get("email")), String(form.get("password")), next));
  };
  return (
    <div className="auth-card">
      <AuthBrand />
      <PageHeader title="Create your account">
        <p className="muted">You get a personal organization on the free plan with 200 credits a month.</p>
      </PageHeader>
      <InvitationNotice next={next} />
      <form onSubmit={(event) => void submit(event)} className="form">
        <ErrorMessage error={error} />
        <div className="field">
          <label htmlFor="name">Name</label>
          <input id="name" name="name" autoComplete="name" required maxLength={100} />
        </div>
        <div className="field">
          <label htmlFor="email">Email</label>
          <input id="email" name="email" type="email" autoComplete="email" required />
        </div>
        <div className="field">
          <label htmlFor="password">Password</label>
          <input id="password" name="password" type="password" autoComplete="new-password" required minLength={8} maxLength={128} aria-describedby="password-hint" />
          <p className="hint" id="password-hint">
            At least 8 characters.
          </p>
        </div>
        <button type="submit" className="button button-primary" disabled={busy}>
          {busy ? "Creating account…" : "Create account"}
        </button>
      </form>
      <p>
        Already have an account? <Link to={`/sign-in${query}`}>Sign in</Link>
      </p>
    </div>
  );
}
