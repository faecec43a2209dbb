import { useState } from "react";
import { api, withQuery } from "../api";
import { creditCount, formatCredits, formatTime } from "../format";
import { Link } from "../router";
import { useSession } from "../session";
import { EmptyState, ErrorMessage, Loading, PageHeader, DataTable, useResource } from "../components/ui";
import type { Balance, Org, UsageEntry } from "../types";

export function BillingPage() {
  const session = useSession();
  const balance = useResource(() => api.get<Balance>("/billing/balance"), []);
  // The plan's limits as this deployment enforces them (a self-hoster's PLANS_JSON included), from the API.
  const org = useResource(() => api.get<Org>("/orgs/current"), []);
  const [entries, setEntries] = useState<UsageEntry[]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const usage = useResource(async () => {
    const page = await api.page<UsageEntry>(withQuery("/billing/usage", { limit: 25 }));
    setEntries(page.data);
    setCursor(page.nextCursor);
    return page;
  }, []);
  const [moreError, setMoreError] = useState<unknown>();
  const [loadingMore, setLoadingMore] = useState(false);
  const loadMore = async () => {
    if (!cursor) return;
    setLoadingMore(true);
    setMoreError(undefined);
    try {
      const page = await api.page<UsageEntry>(withQuery("/billing/usage", { limit: 25, cursor }));
      setEntries((previous) => [...previous, ...page.data]);
      setCursor(page.nextCursor);
    } catch (error) {
      setMoreError(error);
    } finally {
      setLoadingMore(false);
    }
  };
  const facts = org.data?.limits;

  return (
    <>
      <PageHeader title="Billing">
        <p className="muted">1 credit = $0.01. Jobs reserve their estimated cost when they start and are charged on completion.</p>
      </PageHeader>
      <ErrorMessage error={balance.error} title="Could not load your balance" />
      {balance.loading && !balance.data ? <Loading label="Loading balance" /> : null}
      {balance.data ? (
        <div className="grid">
          <section className="card" aria-labelledby="plan-heading">
            <h2 id="plan-heading">Plan</h2>
            <p className="big-number capitalize">{balance.data.plan}</p>
            {facts ? (
              <ul className="plain-list">
                <li>{creditCount(facts.monthlyCredits)} included each month</li>
                <li>{facts.requestsPerMinute.toLocaleString("en-US")} API requests per minute</li>
                <li>{facts.concurrency} jobs running at once</li>
                <li>{facts.jobTypes === "all" ? "All job types" : "Basic job types"}</li>
                <li>{facts.webhooks ? "Webhooks included" : "No webhooks (Starter and above)"}</li>
              </ul>
            ) : null}
            {balance.data.plan === "free" ? (
              <p className="hint">
                Need webhooks, watermarks or captions? Upgrade to Starter. <Link to="/settings/webhooks">About webhooks</Link>
              </p>
            ) : null}
          </section>
          <section className="card" aria-labelledby="balance-heading">
            <h2 id="balance-heading">Balance</h2>
            <p className="big-number">{formatCredits(balance.data.credits)}</p>
            {balance.data.awaitingEmailVerification ? (
              <p className="hint">
                {balance.data.monthlyCredits !== null ? `This month's ${creditCount(balance.data.monthlyCredits)}` : "The free credits"} arrive once{" "}
                {session.user?.emailVerified ? "this organization's creator confirms their email address" : "you confirm your email address"}.
              </p>
            ) : null}
            <p className="muted">{balance.data.reserved > 0 ? `${balance.data.reserved} credits reserved by running jobs.` : "Nothing reserved right now."}</p>
            {balance.data.monthlyCredits !== null && balance.data.renewsAt !== null ? (
              <p className="muted">
                Next monthly top-up (to {creditCount(balance.data.monthlyCredits)}): {formatTime(balance.data.renewsAt)}.
              </p>
            ) : null}
          </section>
        </div>
      ) : null}

      <section aria-labelledby="usage-heading">
        <h2 id="usage-heading">Usage ledger</h2>
        <ErrorMessage error={usage.error} title="Could not load usage" />
        <ErrorMessage error={moreError} title="Could not load more usage" />
        {usage.loading && !usage.data ? (
          <Loading label="Loading usage" />
        ) : entries.length === 0 && usage.data ? (
          <EmptyState title="No usage yet">
            <p>Credits granted and charged for jobs appear here.</p>
          </EmptyState>
        ) : entries.length > 0 ? (
          <>
            <DataTable label="Usage ledger" columns={["When", "Kind", "Description", "Job", { label: "Credits", numeric: true }, { label: "Balance after", numeric: true }]}>
              {entries.map((entry) => (
                <tr key={entry.id}>
                  <td data-label="When">{formatTime(entry.createdAt)}</td>
                  <td data-label="Kind">{entry.kind}</td>
                  <td data-label="Description">{entry.description}</td>
                  <td data-label="Job">{entry.jobId ? <Link to={`/jobs/${entry.jobId}`} className="mono">{entry.jobId}</Link> : "-"}</td>
                  <td data-label="Credits" className="numeric">{entry.credits}</td>
                  <td data-label="Balance after" className="numeric">{entry.balanceAfter}</td>
                </tr>
              ))}
            </DataTable>
            {cursor ? (
              <button type="button" className="button load-more" onClick={() => void loadMore()} disabled={loadingMore}>
                {loadingMore ? "Loading…" : "Load more"}
              </button>
            ) : null}
          </>
        ) : null}
      </section>
    </>
  );
}
