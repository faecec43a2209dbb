import { useState, type FormEvent } from "react";
import { api } from "../api";
import { canManage } from "../members";
import { useSession } from "../session";
import { formatTime } from "../format";
import { ConfirmDialog, CopyButton, EmptyState, ErrorMessage, Loading, Notice, PageHeader, StatusBadge, DataTable, useResource } from "../components/ui";
import type { ApiKey, CreatedApiKey } from "../types";

export function ApiKeysPage() {
  const session = useSession();
  // The API refuses key changes from members (403); the page offers them only to owners and admins.
  const manager = canManage(session.me?.role);
  const keys = useResource(() => api.get<ApiKey[]>("/api-keys"), []);
  const [name, setName] = useState("");
  const [created, setCreated] = useState<CreatedApiKey>();
  const [createError, setCreateError] = useState<unknown>();
  const [creating, setCreating] = useState(false);
  const [toRevoke, setToRevoke] = useState<ApiKey>();
  const [revoking, setRevoking] = useState(false);
  const [revokeError, setRevokeError] = useState<unknown>();
  const [revoked, setRevoked] = useState<string>();

  const create = async (event: FormEvent) => {
    event.preventDefault();
    setCreating(true);
    setCreateError(undefined);
    setRevoked(undefined);
    try {
      const key = await api.post<CreatedApiKey>("/api-keys", { name: name.trim() });
      setCreated(key);
      setName("");
      void keys.reload();
    } catch (error) {
      setCreateError(error);
    } finally {
      setCreating(false);
    }
  };

  const revoke = async () => {
    if (!toRevoke) return;
    setRevoking(true);
    setRevokeError(undefined);
    try {
      await api.delete(`/api-keys/${encodeURIComponent(toRevoke.id)}`);
      setRevoked(toRevoke.name);
      if (created?.id === toRevoke.id) setCreated(undefined);
      setToRevoke(undefined);
      void keys.reload();
    } catch (error) {
      setRevokeError(error);
      setToRevoke(undefined);
    } finally {
      setRevoking(false);
    }
  };

  const active = (keys.data ?? []).filter((key) => key.revokedAt === null);
  const inactive = (keys.data ?? []).filter((key) => key.revokedAt !== null);

  return (
    <>
      <PageHeader title="API keys">
        <p className="muted">
          Keys let your code call the Renderbus API: send <code>Authorization: Bearer rb_…</code>. Keys belong to the organization and act with their creator's role; a member's keys stop working when they leave or are removed.
        </p>
      </PageHeader>

      {created ? (
        <section className="card key-reveal" aria-labelledby="new-key-heading">
          <h2 id="new-key-heading">Your new key “{created.name}”</h2>
          <div className="alert alert-warning">
            <strong>Copy this key now.</strong> It is shown only once; after you leave or reload this page it cannot be shown
            again. If you lose it, create a new key and revoke this one.
          </div>
          <div className="key-row">
            <label htmlFor="new-key" className="visually-hidden">
              New API key
            </label>
            <input id="new-key" className="mono key-value" readOnly value={created.key} onFocus={(event) => event.currentTarget.select()} />
            <CopyButton text={created.key} label="Copy key" />
          </div>
          <button type="button" className="button button-quiet" onClick={() => setCreated(undefined)}>
            I have stored the key
          </button>
        </section>
      ) : null}

      {manager ? null : (
        <Notice>
          Only owners and admins can create and revoke API keys. Your role in this organization is {session.me?.role ?? "member"}; ask an owner or admin
          for a key.
        </Notice>
      )}
      {manager ? (
        <section className="card" aria-labelledby="create-key-heading">
          <h2 id="create-key-heading">Create a key</h2>
          <form className="inline-form" onSubmit={(event) => void create(event)}>
            <div className="field">
              <label htmlFor="key-name">Key name</label>
              <input
                id="key-name"
                value={name}
                onChange={(event) => setName(event.target.value)}
                required
                maxLength={100}
                placeholder="e.g. production server"
                aria-describedby="key-name-hint"
              />
              <p className="hint" id="key-name-hint">
                1 to 100 characters, to recognise the key later.
              </p>
            </div>
            <button type="submit" className="button button-primary" disabled={creating || name.trim() === ""}>
              {creating ? "Creating…" : "Create key"}
            </button>
          </form>
          <ErrorMessage error={createError} title="The key was not created" />
        </section>
      ) : null}

      <section aria-labelledby="keys-heading">
        <h2 id="keys-heading">Keys</h2>
        {revoked ? <Notice tone="success">The key “{revoked}” was revoked. Requests with it are refused from now on.</Notice> : null}
        <ErrorMessage error={revokeError} title="The key was not revoked" />
        <ErrorMessage error={keys.error} title="Could not load keys" />
        {keys.loading && !keys.data ? (
          <Loading label="Loading keys" />
        ) : keys.data && keys.data.length === 0 ? (
          <EmptyState title="No API keys yet">
            <p>{manager ? "Create one above to call the API from your code." : "An owner or admin of this organization can create one."}</p>
          </EmptyState>
        ) : keys.data ? (
          <DataTable label="API keys" columns={["Name", "Key", "Created", "Last used", "Status", { label: "Actions", hidden: true }]}>
            {[...active, ...inactive].map((key) => (
              <tr key={key.id} data-key-id={key.id}>
                <td data-label="Name">{key.name}</td>
                <td data-label="Key" className="mono">{key.start}…</td>
                <td data-label="Created">{formatTime(key.createdAt)}</td>
                <td data-label="Last used">{key.lastUsedAt ? formatTime(key.lastUsedAt) : "Never"}</td>
                <td data-label="Status">{key.revokedAt ? <StatusBadge status="revoked" /> : <StatusBadge status="active" />}</td>
                <td data-label="Actions">
                  {key.revokedAt || !manager ? null : (
                    <button type="button" className="button button-small button-danger" onClick={() => setToRevoke(key)} aria-label={`Revoke key ${key.name}`}>
                      Revoke
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </DataTable>
        ) : null}
      </section>

      <ConfirmDialog
        open={toRevoke !== undefined}
        title={`Revoke “${toRevoke?.name ?? ""}”?`}
        confirmLabel="Revoke key"
        busy={revoking}
        onConfirm={() => void revoke()}
        onCancel={() => setToRevoke(undefined)}
      >
        <p>Every request with this key is refused at once, on every server. This cannot be undone.</p>
      </ConfirmDialog>
    </>
  );
}
