import { useEffect, useState, type FormEvent } from "react";
import { api, withQuery } from "../api";
import { creditCount, formatTime, isTerminal } from "../format";
import { MAX_LIVE_STREAMS, useJobEvents } from "../live";
import { Link, useRouter } from "../router";
import { EmptyState, ErrorMessage, JobProgressBar, Loading, PageHeader, StatusBadge, DataTable, useResource } from "../components/ui";
import { JOB_STATUSES, type Job, type JobType } from "../types";

const PAGE_SIZE = 20;
const POLL_MS = 10_000;

interface Filters {
  status: string;
  type: string;
  batchId: string;
}

export function JobsPage() {
  const { search, navigate } = useRouter();
  const query = new URLSearchParams(search);
  const filters: Filters = { status: query.get("status") ?? "", type: query.get("type") ?? "", batchId: query.get("batchId") ?? "" };
  const jobTypes = useResource(() => api.get<JobType[]>("/job-types"), []);
  const [jobs, setJobs] = useState<Job[]>([]);
  const [nextCursor, setNextCursor] = useState<string | null>(null);
  const [state, setState] = useState<{ loading: boolean; loadingMore: boolean; error?: unknown }>({ loading: true, loadingMore: false });

  const listUrl = (cursor?: string) => withQuery("/jobs", { ...filters, limit: PAGE_SIZE, cursor });

  useEffect(() => {
    let cancelled = false;
    setState({ loading: true, loadingMore: false });
    api
      .page<Job>(listUrl())
      .then((page) => {
        if (cancelled) return;
        setJobs(page.data);
        setNextCursor(page.nextCursor);
        setState({ loading: false, loadingMore: false });
      })
      .catch((error: unknown) => !cancelled && setState({ loading: false, loadingMore: false, error }));
    return () => {
      cancelled = true;
    };
    // The filters come from the URL; `search` changes whenever they do.
  }, [search]);

  const loadMore = async () => {
    if (!nextCursor) return;
    setState((previous) => ({ ...previous, loadingMore: true, error: undefined }));
    try {
      const page = await api.page<Job>(listUrl(nextCursor));
      setJobs((previous) => [...previous, ...page.data.filter((job) => !previous.some((known) => known.id === job.id))]);
      setNextCursor(page.nextCursor);
      setState({ loading: false, loadingMore: false });
    } catch (error) {
      setState({ loading: false, loadingMore: false, error });
    }
  };

  const updateJob = (job: Job) => setJobs((previous) => previous.map((known) => (known.id === job.id ? job : known)));
  const active = jobs.filter((job) => !isTerminal(job.status));
  useJobEvents(
    active.slice(0, MAX_LIVE_STREAMS).map((job) => job.id),
    updateJob,
  );

  // Jobs beyond the streamed few are refreshed by a slow poll of the first page, so every badge stays current.
  const overflow = active.length > MAX_LIVE_STREAMS;
  useEffect(() => {
    if (!overflow) return;
    const timer = setInterval(() => {
      api
        .page<Job>(listUrl())
        .then((page) => page.data.forEach(updateJob))
        .catch(() => undefined);
    }, POLL_MS);
    return () => clearInterval(timer);
  }, [overflow, search]);

  const applyFilters = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const next = withQuery("/jobs", { status: String(form.get("status") ?? ""), type: String(form.get("type") ?? ""), batchId: String(form.get("batchId") ?? "").trim() });
    navigate(next);
  };
  const filtered = Boolean(filters.status || filters.type || filters.batchId);
  // The URL's type is an option from the first render: the select is uncontrolled, so a default value that matched
  // no option yet (the types still loading) would show "Any type" for a filtered list, and the next Apply would drop it.
  const knownTypes = (jobTypes.data ?? []).map((type) => type.name);
  const typeOptions = filters.type && !knownTypes.includes(filters.type) ? [filters.type, ...knownTypes] : knownTypes;

  return (
    <>
      <PageHeader
        title="Jobs"
        actions={
          <Link to="/jobs/new" className="button button-primary">
            New job
          </Link>
        }
      >
        <p className="muted">Every job of your organization, newest first. Statuses update live.</p>
      </PageHeader>

      <form className="filters" onSubmit={applyFilters} aria-label="Filter jobs" key={search}>
        <div className="field">
          <label htmlFor="filter-status">Status</label>
          <select id="filter-status" name="status" defaultValue={filters.status}>
            <option value="">Any status</option>
            {JOB_STATUSES.map((status) => (
              <option key={status} value={status}>
                {status}
              </option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor="filter-type">Type</label>
          <select id="filter-type" name="type" defaultValue={filters.type}>
            <option value="">Any type</option>
            {typeOptions.map((name) => (
              <option key={name} value={name}>
                {name}
              </option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor="filter-batch">Batch id</label>
          <input id="filter-batch" name="batchId" defaultValue={filters.batchId} placeholder="batch_…" />
        </div>
        <div className="filter-actions">
          <button type="submit" className="button">
            Apply filters
          </button>
          {filtered ? (
            <button type="button" className="button button-quiet" onClick={() => navigate("/jobs")}>
              Clear
            </button>
          ) : null}
        </div>
      </form>

      <ErrorMessage error={state.error} title="Could not load jobs" />
      {state.loading ? (
        <Loading label="Loading jobs" />
      ) : jobs.length === 0 && !state.error ? (
        <EmptyState title={filtered ? "No jobs match these filters" : "No jobs yet"}>
          {filtered ? (
            <p>Try another status, type or batch.</p>
          ) : (
            <p>
              Submit your first job: make a thumbnail, transcode a video or generate a QR code. <Link to="/jobs/new">Create a job</Link>
            </p>
          )}
        </EmptyState>
      ) : (
        <>
          <DataTable label="Jobs" columns={["Job", "Type", "Status", "Batch", "Created", "Cost"]}>
            {jobs.map((job) => (
              <tr key={job.id} data-job-id={job.id}>
                <td data-label="Job">
                  <Link to={`/jobs/${job.id}`} className="mono">
                    {job.id}
                  </Link>
                </td>
                <td data-label="Type">{job.type}</td>
                <td data-label="Status">
                  <StatusBadge status={job.status} />
                  <JobProgressBar job={job} compact />
                </td>
                <td data-label="Batch">{job.batchId ? <Link to={`/batches/${job.batchId}`} className="mono">{job.batchId}</Link> : <span className="muted">-</span>}</td>
                <td data-label="Created">{formatTime(job.timing.createdAt)}</td>
                <td data-label="Cost">{job.cost ? creditCount(job.cost.credits) : <span className="muted">-</span>}</td>
              </tr>
            ))}
          </DataTable>
          {nextCursor ? (
            <button type="button" className="button load-more" onClick={() => void loadMore()} disabled={state.loadingMore}>
              {state.loadingMore ? "Loading…" : "Load more jobs"}
            </button>
          ) : null}
        </>
      )}
    </>
  );
}
