import { useCallback, useEffect, useRef, useState, type ReactNode } from "react";
import { messageOf } from "../api";
import { hasNavigated } from "../router";
import { formatDuration } from "../format";
import type { Job } from "../types";

/** A job/batch/delivery/key status as a coloured badge; the text carries the meaning, colour only repeats it. */
export function StatusBadge({ status }: { status: string }) {
  return (
    <span className={`badge badge-${status.replace(/[^a-z]/g, "")}`} data-status={status}>
      {status}
    </span>
  );
}

/**
 * A running job's live progress (docs/concepts.md, "Progress"): a native progress bar with the percent and the time
 * left, or an indeterminate bar while the percent cannot be known. Nothing for jobs that are not running.
 */
export function JobProgressBar({ job, compact = false }: { job: Pick<Job, "id" | "status" | "progress">; compact?: boolean }) {
  if (job.status !== "running") return null;
  const percent = job.progress?.percent ?? null;
  const eta = job.progress?.etaMs ?? null;
  const label = percent === null ? "in progress" : `${percent.toFixed(compact ? 0 : 1)}%`;
  return (
    <span className={`job-progress${compact ? " job-progress-compact" : ""}`} data-testid="job-progress" data-percent={percent ?? ""}>
      <progress max={100} {...(percent === null ? {} : { value: percent })} aria-label={`Progress of ${job.id}`} />
      <span className="job-progress-label">
        {label}
        {!compact && eta !== null ? <span className="muted"> · about {formatDuration(eta)} left</span> : null}
      </span>
    </span>
  );
}

/** An API error as a readable message, announced to screen readers. */
export function ErrorMessage({ error, title }: { error: unknown; title?: string }) {
  if (!error) return null;
  return (
    <div className="alert alert-error" role="alert">
      {title ? <strong>{title}: </strong> : null}
      {messageOf(error)}
    </div>
  );
}

export function Notice({ tone = "info", children }: { tone?: "info" | "success" | "warning"; children: ReactNode }) {
  return (
    <div className={`alert alert-${tone}`} role={tone === "success" ? "status" : undefined}>
      {children}
    </div>
  );
}

export function Loading({ label = "Loading" }: { label?: string }) {
  return (
    <p className="loading" role="status">
      <span className="spinner" aria-hidden="true" />
      {label}…
    </p>
  );
}

export function EmptyState({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="empty">
      <p className="empty-title">{title}</p>
      {children ? <div className="empty-body">{children}</div> : null}
    </div>
  );
}

/**
 * The page title; focused after an in-app navigation so screen-reader and keyboard users start at the new page (on
 * the first load focus stays at the top, where the skip link is).
 */
export function PageHeader({ title, actions, children }: { title: string; actions?: ReactNode; children?: ReactNode }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = `${title} · Renderbus`;
    if (hasNavigated()) heading.current?.focus({ preventScroll: true });
  }, [title]);
  return (
    <header className="page-header">
      <div>
        <h1 ref={heading} tabIndex={-1}>
          {title}
        </h1>
        {children}
      </div>
      {actions ? <div className="page-actions">{actions}</div> : null}
    </header>
  );
}

/** A wide table that scrolls sideways on a phone; focusable so keyboard users can scroll it too. */
function TableWrap({ label, children }: { label: string; children: ReactNode }) {
  return (
    <div className="table-wrap" role="region" aria-label={label} tabIndex={0}>
      {children}
    </div>
  );
}

/** A table column: its header text, optionally right-aligned (`numeric`) or read by screen readers only (`hidden`). */
export type TableColumn = string | { label: string; numeric?: boolean; hidden?: boolean };

/**
 * The dashboard's data table: scrolls sideways in a TableWrap, stacks into cards on a phone (`table-stack`, cells
 * carry `data-label`). Columns left out conditionally may be passed as `false`; `children` are the body rows.
 */
export function DataTable({ label, columns, children }: { label: string; columns: Array<TableColumn | false>; children: ReactNode }) {
  return (
    <TableWrap label={label}>
      <table className="table table-stack">
        <thead>
          <tr>
            {columns.map((column) => {
              if (column === false) return null;
              const { label: text, numeric = false, hidden = false } = typeof column === "string" ? { label: column } : column;
              return (
                <th key={text} scope="col" className={numeric ? "numeric" : undefined}>
                  {hidden ? <span className="visually-hidden">{text}</span> : text}
                </th>
              );
            })}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </TableWrap>
  );
}

/** A modal confirmation on the native <dialog> (focus trap, Escape to cancel). */
export function ConfirmDialog({
  open,
  title,
  children,
  confirmLabel,
  onConfirm,
  onCancel,
  busy,
}: {
  open: boolean;
  title: string;
  children: ReactNode;
  confirmLabel: string;
  onConfirm: () => void;
  onCancel: () => void;
  busy?: boolean;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const element = dialog.current;
    if (!element) return;
    if (open && !element.open) element.showModal();
    if (!open && element.open) element.close();
  }, [open]);
  return (
    <dialog ref={dialog} className="dialog" aria-labelledby="dialog-title" onCancel={(event) => (event.preventDefault(), onCancel())}>
      <h2 id="dialog-title">{title}</h2>
      <div className="dialog-body">{children}</div>
      <div className="dialog-actions">
        <button type="button" className="button" onClick={onCancel} autoFocus>
          Cancel
        </button>
        <button type="button" className="button button-danger" onClick={onConfirm} disabled={busy}>
          {busy ? "Working…" : confirmLabel}
        </button>
      </div>
    </dialog>
  );
}

/**
 * Copies text to the clipboard; says so, or says how to copy by hand when the browser refuses. `hiddenSuffix` is
 * read only by screen readers, after the visible label, to tell several copy buttons on one page apart.
 */
export function CopyButton({ text, label = "Copy", hiddenSuffix }: { text: string; label?: string; hiddenSuffix?: string }) {
  const [state, setState] = useState<"idle" | "copied" | "failed">("idle");
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setState("copied");
    } catch {
      setState("failed");
    }
  };
  return (
    <>
      <button type="button" className="button" onClick={() => void copy()}>
        {state === "copied" ? "Copied" : label}
        {hiddenSuffix ? <span className="visually-hidden"> {hiddenSuffix}</span> : null}
      </button>
      <span className="visually-hidden" role="status">
        {state === "copied" ? "Copied to the clipboard" : state === "failed" ? "Copy failed; select the text and copy it" : ""}
      </span>
      {state === "failed" ? <span className="hint">Your browser blocked the clipboard: select the text and copy it.</span> : null}
    </>
  );
}

/** Loads data for a page: {data, error, loading, reload}. Reload keeps the old data on screen while it runs. */
export function useResource<T>(load: () => Promise<T>, deps: unknown[]) {
  const [state, setState] = useState<{ data?: T; error?: unknown; loading: boolean }>({ loading: true });
  const generation = useRef(0);
  const run = useCallback(load, deps);
  const reload = useCallback(async () => {
    const mine = ++generation.current;
    setState((previous) => ({ ...previous, loading: true }));
    try {
      const data = await run();
      if (mine === generation.current) setState({ data, loading: false });
    } catch (error) {
      if (mine === generation.current) setState((previous) => ({ data: previous.data, error, loading: false }));
    }
  }, [run]);
  useEffect(() => {
    setState({ loading: true });
    void reload();
  }, [reload]);
  return { ...state, reload, setData: (data: T) => setState({ data, loading: false }) };
}

/**
 * A user action (a form submit, a button): `busy` while it runs, and its error kept for <ErrorMessage> until the
 * next run.
 */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const run = async (action: () => Promise<unknown>) => {
    setBusy(true);
    setError(undefined);
    try {
      await action();
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, run };
}
