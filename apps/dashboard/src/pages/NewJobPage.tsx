import { useMemo, useRef, useState, type DragEvent, type FormEvent } from "react";
import { api } from "../api";
import { startUpload } from "../upload";
import { fieldsFromSchema, initialValues, labelFor, paramsFromValues, type FormField, type FormValues } from "../schema-form";
import { Link, useRouter } from "../router";
import { useSession } from "../session";
import { ErrorMessage, Loading, PageHeader, useResource } from "../components/ui";
import type { Job, JobType } from "../types";

/** "New job": the type picker, one URL field per input, and a params form generated from the type's JSON Schema. */
export function NewJobPage() {
  const session = useSession();
  const plan = session.me?.plan ?? "free";
  const jobTypes = useResource(() => api.get<JobType[]>("/job-types"), []);
  const [typeName, setTypeName] = useState("");
  const types = jobTypes.data ?? [];
  const selected = types.find((type) => type.name === typeName) ?? types.find((type) => type.plans.includes(plan));

  return (
    <>
      <PageHeader title="New job">
        <p className="muted">
          Pick what to make, point it at your media by URL or drop a file from your computer, and submit. You can follow
          the job live on the next page.
        </p>
      </PageHeader>
      <ErrorMessage error={jobTypes.error} title="Could not load job types" />
      {jobTypes.loading && !jobTypes.data ? <Loading label="Loading job types" /> : null}
      {selected ? (
        <>
          <div className="field narrow">
            <label htmlFor="job-type">Job type</label>
            <select id="job-type" value={selected.name} onChange={(event) => setTypeName(event.target.value)} aria-describedby="job-type-hint">
              {types.map((type) => {
                const available = type.plans.includes(plan);
                return (
                  <option key={type.name} value={type.name} disabled={!available}>
                    {type.name}
                    {available ? "" : ` (needs ${type.plans[0] ?? "another"} plan)`}
                  </option>
                );
              })}
            </select>
            <p className="hint" id="job-type-hint">
              {selected.description.replace(/\.?$/, ".")} Price: {selected.price.replace(/\.?$/, ".")}
            </p>
          </div>
          <JobForm key={selected.name} jobType={selected} />
        </>
      ) : null}
    </>
  );
}

function JobForm({ jobType }: { jobType: JobType }) {
  const { navigate } = useRouter();
  const fields = useMemo(() => fieldsFromSchema(jobType.paramsSchema), [jobType]);
  const [values, setValues] = useState<FormValues>(() => initialValues(fields));
  const [inputs, setInputs] = useState<Record<string, string>>(() => Object.fromEntries(jobType.inputs.map((name) => [name, ""])));
  const [metadata, setMetadata] = useState("");
  const [fieldErrors, setFieldErrors] = useState<Record<string, string>>({});
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const [uploading, setUploading] = useState<Record<string, boolean>>({});
  const anyUploading = Object.values(uploading).some(Boolean);
  // One idempotency key per filled-in form: a double click or a retry after a network error cannot make two jobs.
  const idempotencyKey = useRef(crypto.randomUUID());
  const lastBody = useRef("");

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    setError(undefined);
    const parsed = paramsFromValues(fields, values);
    const errors: Record<string, string> = parsed.ok ? {} : { ...parsed.errors };
    let metadataValue: Record<string, unknown> = {};
    if (metadata.trim()) {
      try {
        const candidate: unknown = JSON.parse(metadata);
        if (typeof candidate !== "object" || candidate === null || Array.isArray(candidate)) throw new Error("not an object");
        metadataValue = candidate as Record<string, unknown>;
      } catch {
        errors.__metadata = 'Metadata must be a JSON object, e.g. {"orderId": "123"}';
      }
    }
    setFieldErrors(errors);
    if (Object.keys(errors).length > 0 || !parsed.ok) {
      document.getElementById(fieldId(Object.keys(errors)[0] ?? ""))?.focus();
      return;
    }
    const givenInputs = Object.fromEntries(Object.entries(inputs).filter(([, url]) => url.trim() !== "").map(([name, url]) => [name, url.trim()]));
    const body = { type: jobType.name, inputs: givenInputs, params: parsed.params, ...(metadata.trim() ? { metadata: metadataValue } : {}) };
    const bodyText = JSON.stringify(body);
    if (bodyText !== lastBody.current) {
      idempotencyKey.current = crypto.randomUUID();
      lastBody.current = bodyText;
    }
    setBusy(true);
    try {
      const job = await api.post<Job>("/jobs", body, { "Idempotency-Key": idempotencyKey.current });
      navigate(`/jobs/${job.id}`);
    } catch (caught) {
      setError(caught);
      setBusy(false);
    }
  };

  return (
    <form className="form" onSubmit={(event) => void submit(event)} noValidate aria-label={`New ${jobType.name} job`}>
      {jobType.inputs.length > 0 ? (
        <fieldset>
          <legend>Inputs</legend>
          {jobType.inputs.map((name) => (
            <div className="field" key={name}>
              <label htmlFor={`input-${name}`}>{labelFor(name)} URL or upload</label>
              <input
                id={`input-${name}`}
                name={`input-${name}`}
                type="text"
                inputMode="url"
                placeholder="https://example.com/media.mp4"
                value={inputs[name] ?? ""}
                onChange={(event) => setInputs((current) => ({ ...current, [name]: event.target.value }))}
                aria-describedby={`input-${name}-hint`}
              />
              <p className="hint" id={`input-${name}-hint`}>
                A public http(s) link Renderbus can download, or a file you drop below (uploads resume after a network drop
                and are kept 24 hours).
              </p>
              <FileDrop
                name={name}
                onUploading={(active) => setUploading((current) => ({ ...current, [name]: active }))}
                onUploaded={(uploadId) => setInputs((current) => ({ ...current, [name]: uploadId }))}
              />
            </div>
          ))}
        </fieldset>
      ) : null}

      {fields.length > 0 ? (
        <fieldset>
          <legend>Parameters</legend>
          {fields.map((field) => (
            <ParamField
              key={field.name}
              field={field}
              value={values[field.name] ?? ""}
              error={fieldErrors[field.name]}
              onChange={(value) => setValues({ ...values, [field.name]: value })}
            />
          ))}
        </fieldset>
      ) : (
        <p className="muted">This job type has no parameters.</p>
      )}

      <details className="advanced">
        <summary>Metadata (optional)</summary>
        <div className="field">
          <label htmlFor={fieldId("__metadata")}>Metadata as JSON</label>
          <textarea
            id={fieldId("__metadata")}
            rows={3}
            value={metadata}
            onChange={(event) => setMetadata(event.target.value)}
            placeholder='{"orderId": "123"}'
            aria-invalid={fieldErrors.__metadata ? true : undefined}
            aria-describedby={fieldErrors.__metadata ? `${fieldId("__metadata")}-error` : undefined}
          />
          {fieldErrors.__metadata ? (
            <p className="field-error" id={`${fieldId("__metadata")}-error`}>
              {fieldErrors.__metadata}
            </p>
          ) : null}
        </div>
      </details>

      <ErrorMessage error={error} title="The job was not submitted" />
      <div className="form-actions">
        <button type="submit" className="button button-primary" disabled={busy || anyUploading}>
          {busy ? "Submitting…" : anyUploading ? "Uploading…" : "Submit job"}
        </button>
        <Link to="/jobs" className="button button-quiet">
          Cancel
        </Link>
      </div>
    </form>
  );
}

interface UploadState {
  filename: string;
  sent: number;
  total: number;
  status: "uploading" | "retrying" | "done" | "failed";
  message?: string;
}

const megabytes = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

/**
 * A drop zone (and file picker) for one input: uploads the file with tus and a progress bar, keeps going after a
 * network drop from the server's offset, and hands the upload's id to the form as the input.
 */
function FileDrop({ name, onUploading, onUploaded }: { name: string; onUploading(active: boolean): void; onUploaded(uploadId: string): void }) {
  const [state, setState] = useState<UploadState>();
  const [over, setOver] = useState(false);
  const current = useRef<{ abort(): void } | undefined>(undefined);

  const begin = (file: File | undefined) => {
    if (!file) return;
    current.current?.abort();
    setState({ filename: file.name, sent: 0, total: file.size, status: "uploading" });
    onUploading(true);
    void startUpload(file, {
      onProgress: (sent, total) => setState((previous) => previous && { ...previous, sent, total, status: "uploading" }),
      onRetry: () => setState((previous) => previous && { ...previous, status: "retrying" }),
      onSuccess: (uploadId) => {
        setState((previous) => previous && { ...previous, sent: previous.total, status: "done" });
        onUploaded(uploadId);
        onUploading(false);
      },
      onError: (message) => {
        setState((previous) => previous && { ...previous, status: "failed", message });
        onUploading(false);
      },
    }).then((handle) => {
      current.current = handle;
    });
  };
  const drop = (event: DragEvent<HTMLLabelElement>) => {
    event.preventDefault();
    setOver(false);
    begin(event.dataTransfer.files[0]);
  };
  const percent = state && state.total > 0 ? Math.floor((state.sent / state.total) * 100) : 0;
  return (
    <div className="file-drop-field">
      <label
        className={`file-drop${over ? " file-drop-over" : ""}`}
        htmlFor={`file-${name}`}
        onDragOver={(event) => {
          event.preventDefault();
          setOver(true);
        }}
        onDragLeave={() => setOver(false)}
        onDrop={drop}
      >
        Drop a file here, or choose one
        <input id={`file-${name}`} type="file" className="visually-hidden" onChange={(event) => begin(event.target.files?.[0])} />
      </label>
      {state ? (
        <div className="upload-progress" role="status" aria-live="polite">
          <progress max={100} value={percent} aria-label={`Upload of ${state.filename}`} />
          <span>
            {state.status === "done"
              ? `Uploaded ${state.filename} (${megabytes(state.total)})`
              : state.status === "failed"
                ? `Upload of ${state.filename} failed: ${state.message ?? ""}`
                : state.status === "retrying"
                  ? `Connection lost at ${percent}%, resuming…`
                  : `Uploading ${state.filename}: ${percent}% (${megabytes(state.sent)} of ${megabytes(state.total)})`}
          </span>
        </div>
      ) : null}
    </div>
  );
}

const fieldId = (name: string) => `param-${name.replace(/[^\w-]/g, "_")}`;

function ParamField({ field, value, error, onChange }: { field: FormField; value: string | boolean; error: string | undefined; onChange: (value: string | boolean) => void }) {
  const id = fieldId(field.name);
  const describedBy = [field.description ? `${id}-hint` : "", error ? `${id}-error` : ""].filter(Boolean).join(" ") || undefined;
  const common = { id, name: field.name, "aria-describedby": describedBy, "aria-invalid": error ? true : undefined, required: field.required };
  const label = (
    <label htmlFor={id}>
      {field.label}
      {field.required ? <span className="required"> (required)</span> : null}
    </label>
  );
  const help = (
    <>
      {field.description ? (
        <p className="hint" id={`${id}-hint`}>
          {field.description}
        </p>
      ) : null}
      {error ? (
        <p className="field-error" id={`${id}-error`}>
          {error}
        </p>
      ) : null}
    </>
  );
  if (field.kind === "checkbox") {
    return (
      <div className="field field-checkbox">
        <input type="checkbox" {...common} checked={value === true} onChange={(event) => onChange(event.target.checked)} />
        {label}
        {help}
      </div>
    );
  }
  return (
    <div className="field">
      {label}
      {field.kind === "select" ? (
        <select {...common} value={String(value)} onChange={(event) => onChange(event.target.value)}>
          {field.required ? null : <option value="">Default</option>}
          {field.options.map((option) => (
            <option key={option} value={option}>
              {option}
            </option>
          ))}
        </select>
      ) : field.kind === "number" ? (
        <input
          {...common}
          type="number"
          inputMode={field.integer ? "numeric" : "decimal"}
          step={field.multipleOf ?? (field.integer ? 1 : "any")}
          min={field.min}
          max={field.max}
          value={String(value)}
          placeholder={field.required ? undefined : "Default"}
          onChange={(event) => onChange(event.target.value)}
        />
      ) : (
        <input {...common} type="text" maxLength={field.maxLength} value={String(value)} onChange={(event) => onChange(event.target.value)} />
      )}
      {help}
    </div>
  );
}
