import type { FormEvent } from "react";
import { Link } from "../router";
import { useSession } from "../session";
import { ErrorMessage, PageHeader, useAction } from "../components/ui";

export function SignInPage() {
  const session = useSession();
  const { busy, error, run } = useAction();
  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    await run(() => session.signIn(String(form.get("email")), String(form.get("password"))));
  };
  return (
    <div className="auth-card">
      <p className="brand brand-large">
        <span className="brand-mark" aria-hidden="true">
          R
        </span>
        Renderbus
      </p>
      <PageHeader title="Sign in" />
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
        New to Renderbus? <Link to="/sign-up">Create an account</Link>
      </p>
    </div>
  );
}

export function SignUpPage() {
  const session = useSession();
  const { busy, error, run } = useAction();
  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    await run(() => session.signUp(String(form.get("name")), String(form.get("email")), String(form.get("password"))));
  };
  return (
    <div className="auth-card">
      <p className="brand brand-large">
        <span className="brand-mark" aria-hidden="true">
          R
        </span>
        Renderbus
      </p>
      <PageHeader title="Create your account">
        <p className="muted">You get a personal organization on the free plan with 200 credits a month.</p>
      </PageHeader>
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
        Already have an account? <Link to="/sign-in">Sign in</Link>
      </p>
    </div>
  );
}
