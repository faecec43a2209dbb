import { useState, type FormEvent } from "react";
import { api, withQuery } from "../api";
import { Link } from "../router";
import { useSession } from "../session";
import { canManage } from "../members";
import { DeliveriesTable } from "../components/DeliveriesTable";
import { WebhookEndpoints } from "../components/WebhookEndpoints";
import { EmptyState, ErrorMessage, Loading, Notice, PageHeader, useResource } from "../components/ui";
import type { Delivery, Org } from "../types";


export function WebhooksPage() {
  const session = useSession();
  const org = useResource(() => api.get<Org>("/orgs/current"), []);
  const plan = org.data?.plan ?? session.me?.plan ?? "free";
  // As this deployment enforces it (PLANS_JSON may give webhooks to any plan), from the API.
  const allowed = org.data?.limits.webhooks ?? false;
  // Members may look; changing the settings, test events and retries are for owners and admins (the API answers 403).
  const manager = canManage(session.me?.role);

  return (
    <>
      <PageHeader title="Webhooks">
        <p className="muted">
          Renderbus POSTs signed JSON to your URL when a job starts, completes or fails, and when a batch completes. Verify
          the <code>X-Renderbus-Signature</code> header with your secret.
        </p>
      </PageHeader>
      <ErrorMessage error={org.error} title="Could not load your organization" />
      {org.loading && !org.data ? <Loading label="Loading webhook settings" /> : null}
      {org.data && !allowed ? (
        <div className="alert alert-warning" role="note">
          <strong>Webhooks are not included in the {plan} plan.</strong> They are available on Starter and above. Upgrade your
          plan to get job and batch notifications; until then, poll <code>GET /jobs/&#123;id&#125;</code> or follow a job live on its
          page. See <Link to="/billing">Billing</Link> for your plan.
        </div>
      ) : null}
      {org.data && allowed && !manager ? <Notice>Only owners and admins can change the webhook settings.</Notice> : null}
      {org.data ? <WebhookForm org={org.data} disabled={!allowed || !manager} onSaved={(next) => org.setData(next)} /> : null}
      {org.data && allowed && manager ? <TestEvent configured={Boolean(org.data.webhookUrl)} /> : null}
      {org.data && allowed ? <WebhookEndpoints canManage={manager} /> : null}
      {org.data && allowed ? <RecentDeliveries canRetry={manager} /> : null}
    </>
  );
}

function WebhookForm({ org, disabled, onSaved }: { org: Org; disabled: boolean; onSaved: (org: Org) => void }) {
  const [url, setUrl] = useState(org.webhookUrl ?? "");
  const [secret, setSecret] = useState("");
  const [error, setError] = useState<unknown>();
  const [saved, setSaved] = useState(false);
  const [busy, setBusy] = useState(false);
  const save = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    setSaved(false);
    try {
      const body = { webhookUrl: url.trim() === "" ? null : url.trim(), ...(secret ? { webhookSecret: secret } : {}) };
      onSaved(await api.patch<Org>(`/orgs/${encodeURIComponent(org.id)}`, body));
      setSecret("");
      setSaved(true);
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section className="card" aria-labelledby="endpoint-heading">
      <h2 id="endpoint-heading">Default endpoint</h2>
      <form className="form" onSubmit={(event) => void save(event)}>
        <fieldset disabled={disabled} className="plain-fieldset">
          <legend className="visually-hidden">Webhook endpoint</legend>
          <div className="field">
            <label htmlFor="webhook-url">Endpoint URL</label>
            <input id="webhook-url" type="url" inputMode="url" value={url} onChange={(event) => setUrl(event.target.value)} placeholder="https://example.com/renderbus-webhooks" aria-describedby="webhook-url-hint" />
            <p className="hint" id="webhook-url-hint">
              HTTPS in production. Leave empty and save to stop deliveries.
            </p>
          </div>
          <div className="field">
            <label htmlFor="webhook-secret">Signing secret</label>
            <input
              id="webhook-secret"
              type="password"
              autoComplete="new-password"
              value={secret}
              onChange={(event) => setSecret(event.target.value)}
              minLength={8}
              maxLength={256}
              placeholder={org.webhookSecretSet ? "•••••••• (set; type to replace)" : "At least 8 characters"}
              required={!org.webhookSecretSet && url.trim() !== ""}
              aria-describedby="webhook-secret-hint"
            />
            <p className="hint" id="webhook-secret-hint">
              {org.webhookSecretSet ? "A secret is set. It is never shown again; type a new one to replace it." : "No secret is set yet: required with the URL."} Renderbus
              signs each delivery with HMAC-SHA256 of the raw body using this secret.
            </p>
          </div>
          <button type="submit" className="button button-primary" disabled={busy}>
            {busy ? "Saving…" : "Save webhook settings"}
          </button>
        </fieldset>
      </form>
      {saved ? <Notice tone="success">Webhook settings saved.</Notice> : null}
      <ErrorMessage error={error} title="The settings were not saved" />
    </section>
  );
}

function TestEvent({ configured }: { configured: boolean }) {
  const [outcome, setOutcome] = useState<{ succeeded: boolean; delivery: Delivery | null }>();
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const send = async () => {
    setBusy(true);
    setError(undefined);
    setOutcome(undefined);
    try {
      setOutcome(await api.post<{ succeeded: boolean; delivery: Delivery | null }>("/webhooks/test"));
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  };
  const lastAttempt = outcome?.delivery?.attemptLog.at(-1);
  return (
    <section className="card" aria-labelledby="test-heading">
      <h2 id="test-heading">Send a test event</h2>
      <p className="muted">Sends a signed <code>webhook.test</code> event to your endpoint now and shows what it answered.</p>
      <button type="button" className="button" onClick={() => void send()} disabled={busy || !configured}>
        {busy ? "Sending…" : "Send test event"}
      </button>
      {!configured ? <p className="hint">Save an endpoint URL first.</p> : null}
      <div aria-live="polite">
        {outcome ? (
          outcome.succeeded ? (
            <Notice tone="success">
              Test event delivered
              {lastAttempt?.responseStatus ? `: your endpoint answered HTTP ${lastAttempt.responseStatus}` : ""}
              {lastAttempt ? ` in ${lastAttempt.latencyMs} ms` : ""}.
            </Notice>
          ) : (
            <div className="alert alert-error" role="alert">
              Test event failed
              {lastAttempt?.responseStatus ? `: your endpoint answered HTTP ${lastAttempt.responseStatus}` : ""}
              {(lastAttempt?.error ?? outcome.delivery?.lastError) ? `: ${lastAttempt?.error ?? outcome.delivery?.lastError}` : ""}.
            </div>
          )
        ) : null}
      </div>
      <ErrorMessage error={error} title="The test event was not sent" />
    </section>
  );
}

function RecentDeliveries({ canRetry }: { canRetry: boolean }) {
  const deliveries = useResource(() => api.page<Delivery>(withQuery("/webhooks/deliveries", { limit: 20 })), []);
  const [retryError, setRetryError] = useState<unknown>();
  const [retrying, setRetrying] = useState<string>();
  const retry = async (id: string) => {
    setRetrying(id);
    setRetryError(undefined);
    try {
      await api.post(`/webhooks/deliveries/${encodeURIComponent(id)}/retry`);
      await deliveries.reload();
    } catch (error) {
      setRetryError(error);
    } finally {
      setRetrying(undefined);
    }
  };
  const rows = deliveries.data?.data ?? [];
  return (
    <section className="card" aria-labelledby="recent-heading">
      <div className="section-header">
        <h2 id="recent-heading">Recent deliveries</h2>
        <button type="button" className="button button-small" onClick={() => void deliveries.reload()} disabled={deliveries.loading}>
          {deliveries.loading ? "Refreshing…" : "Refresh"}
        </button>
      </div>
      <ErrorMessage error={deliveries.error} title="Could not load deliveries" />
      <ErrorMessage error={retryError} title="Retry failed" />
      {deliveries.loading && !deliveries.data ? (
        <Loading label="Loading deliveries" />
      ) : rows.length === 0 ? (
        <EmptyState title="No deliveries yet">
          <p>Send a test event or submit a job to see deliveries here.</p>
        </EmptyState>
      ) : (
        <DeliveriesTable label="Recent deliveries" deliveries={rows} showJob attemptsOf={(id) => rows.find((row) => row.id === id)?.attemptLog ?? []} retrying={retrying} onRetry={canRetry ? (id) => void retry(id) : undefined} />
      )}
    </section>
  );
}
