import { useRef, useState, type FormEvent } from "react";
import { request } from "../api";
import { BASE, Link, useRouter } from "../router";
import { useSession } from "../session";
import {
  PASSWORD_CHANGED_QUERY,
  PASSWORD_MAX_LENGTH,
  PASSWORD_MIN_LENGTH,
  newPasswordProblem,
  resetLinkOf,
  resetLinkRefused,
  resetUnavailable,
  type NewPasswordProblem,
} from "../password-reset";
import { ErrorMessage, PageHeader, useAction } from "../components/ui";
import { AuthBrand, useNext } from "./AuthPages";

/**
 * Where a reset link lands: Better Auth's `/auth/reset-password/<token>` redirects there with `?token=`, or with
 * `?error=INVALID_TOKEN` for a link that is used, past its hour or never issued.
 */
export const PASSWORD_RESET_REDIRECT = `${BASE}/reset-password`;

/** Said instead of Better Auth's "Reset password isn't enabled" (a deployment without SMTP_URL). */
const RESET_UNAVAILABLE =
  "Password reset is not available here: this Renderbus deployment has no mail server to send the link. Ask its operator for help.";

/**
 * "Forgot your password?": asks for the address and has a link emailed to it. The answer is the same whether the
 * address has an account or not (the auth service does not tell), and so is what this page says.
 */
export function ForgotPasswordPage() {
  const { query } = useNext();
  const { busy, error, run } = useAction();
  const [sentTo, setSentTo] = useState<string>();
  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const email = String(new FormData(event.currentTarget).get("email")).trim();
    await run(async () => {
      setSentTo(undefined);
      try {
        await request("POST", "/auth/request-password-reset", { email, redirectTo: PASSWORD_RESET_REDIRECT });
      } catch (caught) {
        throw resetUnavailable(caught) ? new Error(RESET_UNAVAILABLE) : caught;
      }
      setSentTo(email);
    });
  };
  return (
    <div className="auth-card">
      <AuthBrand />
      <PageHeader title="Reset your password">
        <p className="muted">Enter the email address you sign in with: we email it a link to choose a new password.</p>
      </PageHeader>
      <div role="status">
        {sentTo ? (
          <p className="alert alert-success">
            If an account uses <strong className="break">{sentTo}</strong>, a link to reset its password is on its way. It works for 1 hour.
          </p>
        ) : null}
      </div>
      <form onSubmit={(event) => void submit(event)} className="form">
        <ErrorMessage error={error} />
        <div className="field">
          <label htmlFor="email">Email</label>
          <input id="email" name="email" type="email" autoComplete="email" required />
        </div>
        <button type="submit" className="button button-primary" disabled={busy}>
          {busy ? "Sending…" : sentTo ? "Send another link" : "Send the link"}
        </button>
      </form>
      <BackLink query={query} />
    </div>
  );
}

/**
 * Where a reset link lands: a new password, twice. Open signed in or not (App.tsx): the link may be opened in a
 * browser signed in to any account. Choosing the password signs the account out everywhere (the auth service), and
 * this browser out too, on to the sign-in page, which says the password changed.
 */
export function ResetPasswordPage() {
  const session = useSession();
  const { search, navigate } = useRouter();
  const link = resetLinkOf(search);
  const [refused, setRefused] = useState(false);
  const [problem, setProblem] = useState<NewPasswordProblem>();
  const fields = { newPassword: useRef<HTMLInputElement>(null), confirmation: useRef<HTMLInputElement>(null) };
  const { busy, error, run } = useAction();

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    if (!("token" in link)) return;
    const form = new FormData(event.currentTarget);
    const newPassword = String(form.get("newPassword"));
    const found = newPasswordProblem(newPassword, String(form.get("confirmation")));
    setProblem(found);
    if (found) {
      fields[found.field].current?.focus();
      return;
    }
    await run(async () => {
      try {
        await request("POST", "/auth/reset-password", { newPassword, token: link.token });
      } catch (caught) {
        if (!resetLinkRefused(caught)) throw caught;
        setRefused(true);
        return;
      }
      // The account's sessions are gone; a browser signed in to another account signs out too, so that the sign-in
      // page shows (signed in, it would move on to Jobs). Should the sign-out fail, reading the session again finds
      // a revoked one signed out.
      if (session.status === "signed-in") await session.signOut().catch(() => session.refresh().catch(() => undefined));
      navigate(`/sign-in${PASSWORD_CHANGED_QUERY}`, { replace: true });
    });
  };

  const idOf = (field: NewPasswordProblem["field"]) => (field === "newPassword" ? "new-password" : "confirm-password");
  const fieldProps = (field: NewPasswordProblem["field"], hint?: string) => {
    const id = idOf(field);
    const invalid = problem?.field === field;
    const describedBy = [hint ?? "", invalid ? `${id}-error` : ""].filter(Boolean).join(" ") || undefined;
    return { id, name: field, ref: fields[field], "aria-invalid": invalid ? true : undefined, "aria-describedby": describedBy };
  };
  const fieldError = (field: NewPasswordProblem["field"]) =>
    problem?.field === field ? (
      <p className="field-error" id={`${idOf(field)}-error`}>
        {problem.message}
      </p>
    ) : null;

  return (
    <div className="auth-card">
      <AuthBrand />
      <PageHeader title="Choose a new password" />
      {"problem" in link || refused ? (
        <div className="alert alert-error" role="alert">
          {refused ? "This reset link is no longer valid: it was used already or has expired." : "This reset link is not valid or has expired."}{" "}
          <Link to="/forgot-password">Ask for a new link</Link>
        </div>
      ) : (
        <form onSubmit={(event) => void submit(event)} className="form">
          <ErrorMessage error={error} title="The password was not changed" />
          <div className="field">
            <label htmlFor="new-password">New password</label>
            <input
              {...fieldProps("newPassword", "new-password-hint")}
              type="password"
              autoComplete="new-password"
              required
              minLength={PASSWORD_MIN_LENGTH}
              maxLength={PASSWORD_MAX_LENGTH}
            />
            <p className="hint" id="new-password-hint">
              At least {PASSWORD_MIN_LENGTH} characters.
            </p>
            {fieldError("newPassword")}
          </div>
          <div className="field">
            <label htmlFor="confirm-password">Confirm new password</label>
            <input {...fieldProps("confirmation")} type="password" autoComplete="new-password" required maxLength={PASSWORD_MAX_LENGTH} />
            {fieldError("confirmation")}
          </div>
          <button type="submit" className="button button-primary" disabled={busy}>
            {busy ? "Changing password…" : "Change password"}
          </button>
        </form>
      )}
      <BackLink query="" />
    </div>
  );
}

/** Back to the sign-in page, or, for someone signed in (who may use these pages too), to their jobs. */
function BackLink({ query }: { query: string }) {
  const session = useSession();
  return <p>{session.status === "signed-in" ? <Link to="/jobs">Back to your jobs</Link> : <Link to={`/sign-in${query}`}>Back to sign in</Link>}</p>;
}
