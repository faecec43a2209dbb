import { useState, type FormEvent } from "react";
import { api } from "../api";
import type { CreatedEndpoint, Delivery, Endpoint } from "../types";
import { formatTime } from "../format";
import { CopyButton, DataTable, EmptyState, ErrorMessage, Loading, Notice, useAction, useResource } from "./ui";

/** The events an endpoint can subscribe to (docs/webhooks.md, "Endpoints"); "*" is every job and batch event. */
const EVENTS = [
  { name: "*", label: "Every job and batch event (*)" },
  { name: "job.running", label: "job.running" },
  { name: "job.completed", label: "job.completed" },
  { name: "job.failed", label: "job.failed" },
  { name: "batch.completed", label: "batch.completed" },
  { name: "endpoint.disabled", label: "endpoint.disabled (another endpoint was disabled)" },
];
/** "97% of 1,204", or a dash when the endpoint finished no delivery in the last 24 hours. */
function successRate(endpoint: Endpoint): string {
  const recent = endpoint.recentDeliveries;
  const finished = recent ? recent.succeeded + recent.failed : 0;
  if (!recent || finished === 0) return "–";
  return `${Math.floor((recent.succeeded / finished) * 100)}% of ${finished.toLocaleString("en")}`;
}

/** Banner shown on the webhooks pages while any endpoint is disabled. */
export function DisabledEndpointsBanner({ endpoints }: { endpoints: Endpoint[] }) {
  const disabled = endpoints.filter((endpoint) => !endpoint.enabled);
  if (disabled.length === 0) return null;
  return (
    <div className="alert alert-warning" role="alert">
      <strong>
        {disabled.length === 1 ? "1 webhook endpoint is disabled" : `${disabled.length} webhook endpoints are disabled`}.
      </strong>{" "}
      Its deliveries are stored as skipped: {disabled.map((endpoint) => `${endpoint.url}${endpoint.disabledReason ? ` (${endpoint.disabledReason})` : ""}`).join(", ")}. Fix
      the receiver, enable the endpoint below, then recover the window it missed.
    </div>
  );
}

/** The org's endpoints: list with state and success rate, create, enable/disable, rotate, recover. */
export function WebhookEndpoints({ canManage }: { canManage: boolean }) {
  const endpoints = useResource(() => api.get<Endpoint[]>("/webhooks/endpoints"), []);
  const [secret, setSecret] = useState<{ endpointId: string; secret: string; rotated: boolean }>();
  const [tested, setTested] = useState<{ url: string; succeeded: boolean; detail: string }>();
  const action = useAction();
  const list = endpoints.data ?? [];

  const setEnabled = (endpoint: Endpoint, enabled: boolean) =>
    action.run(async () => {
      await api.patch<Endpoint>(`/webhooks/endpoints/${encodeURIComponent(endpoint.id)}`, { enabled });
      await endpoints.reload();
    });
  const rotate = (endpoint: Endpoint) =>
    action.run(async () => {
      const rotated = await api.post<CreatedEndpoint>(`/webhooks/endpoints/${encodeURIComponent(endpoint.id)}/rotate-secret`, {});
      setSecret({ endpointId: rotated.id, secret: rotated.secret, rotated: true });
      await endpoints.reload();
    });

  const sendTest = (endpoint: Endpoint) =>
    action.run(async () => {
      setTested(undefined);
      const outcome = await api.post<{ succeeded: boolean; delivery: Delivery | null }>("/webhooks/test", { endpointId: endpoint.id });
      const last = outcome.delivery?.attemptLog.at(-1);
      const detail = last ? (last.responseStatus !== null ? `HTTP ${last.responseStatus} in ${last.latencyMs} ms` : (last.error ?? "no response")) : "";
      setTested({ url: endpoint.url, succeeded: outcome.succeeded, detail });
      await endpoints.reload();
    });

  return (
    <>
      <DisabledEndpointsBanner endpoints={list} />
      <section className="card" aria-labelledby="endpoints-heading">
        <div className="section-header">
          <h2 id="endpoints-heading">Endpoints</h2>
          <button type="button" className="button button-small" onClick={() => void endpoints.reload()} disabled={endpoints.loading}>
            {endpoints.loading ? "Reloading…" : "Reload endpoints"}
          </button>
        </div>
        <p className="muted">
          Each event goes to every enabled endpoint that subscribes to it, signed with that endpoint&apos;s secret. The success rate counts its
          deliveries of the last 24 hours that succeeded or failed.
        </p>
        <ErrorMessage error={endpoints.error} title="Could not load the endpoints" />
        <ErrorMessage error={action.error} title="The endpoint was not changed" />
        <div aria-live="polite">
          {tested ? (
            tested.succeeded ? (
              <Notice tone="success">
                Test event delivered to {tested.url}: {tested.detail}.
              </Notice>
            ) : (
              <div className="alert alert-error" role="alert">
                Test event to {tested.url} failed: {tested.detail}.
              </div>
            )
          ) : null}
        </div>
        {secret ? (
          <div className="alert alert-success" role="status">
            <label htmlFor="endpoint-secret">{secret.rotated ? "New signing secret" : "Signing secret"} of {secret.endpointId}</label>
            <input id="endpoint-secret" readOnly value={secret.secret} className="mono" onFocus={(event) => event.target.select()} />
            <CopyButton text={secret.secret} label="Copy secret" />
            <p>
              It is shown only once. {secret.rotated ? "The old secret keeps signing for 24 hours, beside the new one." : ""}
            </p>
            <button type="button" className="button button-small" onClick={() => setSecret(undefined)}>
              I have stored it
            </button>
          </div>
        ) : null}
        {endpoints.loading && !endpoints.data ? (
          <Loading label="Loading endpoints" />
        ) : list.length === 0 ? (
          <EmptyState title="No endpoints yet">
            <p>Add one below, or save an endpoint URL above.</p>
          </EmptyState>
        ) : (
          <DataTable label="Webhook endpoints" columns={["Endpoint", "Events", "State", { label: "Success rate", numeric: true }, canManage && "Actions"]}>
            {list.map((endpoint) => {
              return (
                <tr key={endpoint.id}>
                  <td>
                    <div className="mono">{endpoint.url}</div>
                    <div className="hint">
                      {endpoint.id}
                      {endpoint.description ? ` · ${endpoint.description}` : ""}
                      {endpoint.ordering === "fifo" ? " · FIFO" : ""}
                      {endpoint.rateLimitPerSecond ? ` · ${endpoint.rateLimitPerSecond}/s` : ""}
                    </div>
                  </td>
                  <td>{endpoint.events.join(", ")}</td>
                  <td>
                    {endpoint.enabled ? (
                      "Enabled"
                    ) : (
                      <>
                        <strong>Disabled</strong>
                        {endpoint.disabledReason ? `: ${endpoint.disabledReason}` : ""}
                        {endpoint.disabledAt ? <div className="hint">since {formatTime(endpoint.disabledAt)}</div> : null}
                      </>
                    )}
                  </td>
                  <td className="numeric">{successRate(endpoint)}</td>
                  {canManage ? (
                    <td>
                      <div className="page-actions">
                        <button type="button" className="button button-small" disabled={action.busy} onClick={() => void setEnabled(endpoint, !endpoint.enabled)}>
                          {endpoint.enabled ? "Disable" : "Enable"}
                          <span className="visually-hidden"> {endpoint.url}</span>
                        </button>
                        <button type="button" className="button button-small" disabled={action.busy || !endpoint.enabled} onClick={() => void sendTest(endpoint)}>
                          Send test<span className="visually-hidden"> to {endpoint.url}</span>
                        </button>
                        <button type="button" className="button button-small" disabled={action.busy} onClick={() => void rotate(endpoint)}>
                          Rotate secret<span className="visually-hidden"> of {endpoint.url}</span>
                        </button>
                      </div>
                    </td>
                  ) : null}
                </tr>
              );
            })}
          </DataTable>
        )}
      </section>
      {canManage ? (
        <CreateEndpoint
          onCreated={(created) => {
            setSecret({ endpointId: created.id, secret: created.secret, rotated: false });
            void endpoints.reload();
          }}
        />
      ) : null}
      {canManage && list.length > 0 ? <RecoverWindow endpoints={list} onRecovered={() => void endpoints.reload()} /> : null}
    </>
  );
}

function CreateEndpoint({ onCreated }: { onCreated: (endpoint: CreatedEndpoint) => void }) {
  const [url, setUrl] = useState("");
  const [description, setDescription] = useState("");
  const [events, setEvents] = useState<string[]>(["*"]);
  const [fifo, setFifo] = useState(false);
  const action = useAction();
  const toggle = (name: string, checked: boolean) => setEvents((current) => (checked ? [...current.filter((event) => event !== name), name] : current.filter((event) => event !== name)));
  const submit = (event: FormEvent) => {
    event.preventDefault();
    void action.run(async () => {
      const created = await api.post<CreatedEndpoint>("/webhooks/endpoints", {
        url: url.trim(),
        events,
        ...(description.trim() ? { description: description.trim() } : {}),
        ordering: fifo ? "fifo" : "none",
      });
      setUrl("");
      setDescription("");
      onCreated(created);
    });
  };
  return (
    <section className="card" aria-labelledby="new-endpoint-heading">
      <h2 id="new-endpoint-heading">Add an endpoint</h2>
      <form className="form" onSubmit={submit}>
        <div className="field">
          <label htmlFor="new-endpoint-url">URL</label>
          <input id="new-endpoint-url" type="url" inputMode="url" required maxLength={2048} value={url} onChange={(event) => setUrl(event.target.value)} placeholder="https://example.com/hooks" />
        </div>
        <div className="field">
          <label htmlFor="new-endpoint-description">Description</label>
          <input id="new-endpoint-description" maxLength={500} value={description} onChange={(event) => setDescription(event.target.value)} />
        </div>
        <fieldset className="field">
          <legend>Events</legend>
          {EVENTS.map((event) => (
            <label key={event.name} className="field-checkbox">
              <input type="checkbox" checked={events.includes(event.name)} onChange={(change) => toggle(event.name, change.target.checked)} /> {event.label}
            </label>
          ))}
        </fieldset>
        <label className="field-checkbox">
          <input type="checkbox" checked={fifo} onChange={(event) => setFifo(event.target.checked)} /> FIFO: deliver one at a time, in order
        </label>
        <button type="submit" className="button button-primary" disabled={action.busy || events.length === 0}>
          {action.busy ? "Creating…" : "Create endpoint"}
        </button>
        {events.length === 0 ? <p className="hint">Pick at least one event.</p> : null}
      </form>
      <ErrorMessage error={action.error} title="The endpoint was not created" />
    </section>
  );
}

/** `datetime-local` gives local wall-clock time without a zone; the browser's zone turns it into epoch ms. */
const epochOf = (local: string) => (local ? new Date(local).getTime() : Number.NaN);

function RecoverWindow({ endpoints, onRecovered }: { endpoints: Endpoint[]; onRecovered: () => void }) {
  const [endpointId, setEndpointId] = useState(endpoints[0]?.id ?? "");
  const [since, setSince] = useState("");
  const [until, setUntil] = useState("");
  const [count, setCount] = useState<number>();
  const action = useAction();
  const submit = (event: FormEvent) => {
    event.preventDefault();
    setCount(undefined);
    void action.run(async () => {
      const from = epochOf(since);
      const to = epochOf(until);
      if (!Number.isFinite(from)) throw new Error("Pick the start of the window.");
      if (until && !(to > from)) throw new Error("The end of the window must be after its start.");
      const recovered = await api.post<{ count: number }>(`/webhooks/endpoints/${encodeURIComponent(endpointId)}/recover`, { since: from, ...(until ? { until: to } : {}) });
      setCount(recovered.count);
      onRecovered();
    });
  };
  return (
    <section className="card" aria-labelledby="recover-heading">
      <h2 id="recover-heading">Recover failed deliveries</h2>
      <p className="muted">Every failed or skipped delivery of the endpoint created in the window is sent again (at most one recovery per endpoint a minute).</p>
      <form className="form" onSubmit={submit}>
        <div className="field">
          <label htmlFor="recover-endpoint">Endpoint</label>
          <select id="recover-endpoint" value={endpointId} onChange={(event) => setEndpointId(event.target.value)}>
            {endpoints.map((endpoint) => (
              <option key={endpoint.id} value={endpoint.id}>
                {endpoint.url} ({endpoint.id})
              </option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor="recover-since">From</label>
          <input id="recover-since" type="datetime-local" required value={since} onChange={(event) => setSince(event.target.value)} />
        </div>
        <div className="field">
          <label htmlFor="recover-until">Until (empty: now)</label>
          <input id="recover-until" type="datetime-local" value={until} onChange={(event) => setUntil(event.target.value)} />
        </div>
        <button type="submit" className="button" disabled={action.busy}>
          {action.busy ? "Recovering…" : "Recover deliveries"}
        </button>
      </form>
      <div aria-live="polite">{count !== undefined ? <Notice tone="success">{count === 1 ? "1 delivery is" : `${count} deliveries are`} being sent again.</Notice> : null}</div>
      <ErrorMessage error={action.error} title="Nothing was recovered" />
    </section>
  );
}
