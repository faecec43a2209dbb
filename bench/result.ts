/** One target of the issue, checked against a figure of this run. */
export interface TargetCheck {
  /** e.g. "GET /me req/s vs /healthz" */
  name: string;
  /** e.g. ">= 50%" */
  target: string;
  /** The measured figure, formatted. */
  actual: string;
  /** null when it could not be judged (e.g. the receiver was the bottleneck). */
  met: boolean | null;
  /** When missed: by how much, e.g. "12 points short" or "38 ms over". */
  missedBy?: string;
  /** When not judged: why, e.g. "the receiver was the bottleneck". */
  reason?: string;
}

/** What one benchmark reports: a table of figures, the targets it checks, and notes on how to read them. */
export interface BenchmarkResult {
  id: string;
  title: string;
  /** What the figures are compared with, measured in the same run. */
  baseline: string;
  columns: string[];
  rows: Array<Array<string | number>>;
  targets: TargetCheck[];
  notes: string[];
  /** Raw figures for the JSON file. */
  data: Record<string, unknown>;
}

/** `actual >= minimum` with the shortfall spelled out. */
export function atLeast(name: string, actual: number, minimum: number, unit: string, format = (v: number) => `${v}${unit}`): TargetCheck {
  const met = actual >= minimum;
  return { name, target: `>= ${format(minimum)}`, actual: format(actual), met, ...(met ? {} : { missedBy: `${format(round(minimum - actual))} short` }) };
}

/** `actual < maximum` with the excess spelled out. */
export function below(name: string, actual: number, maximum: number, unit: string): TargetCheck {
  const met = actual < maximum;
  return { name, target: `< ${maximum}${unit}`, actual: `${actual}${unit}`, met, ...(met ? {} : { missedBy: `${round(actual - maximum)}${unit} over` }) };
}

/** The figure of `check` reported without a verdict, and why. */
export function notJudged(check: TargetCheck, reason: string): TargetCheck {
  return { name: check.name, target: check.target, actual: check.actual, met: null, reason };
}

// Two decimals: a ratio missed by 0.04x must not read "0x short".
const round = (value: number) => Math.round(value * 100) / 100;

/** A ratio as a percentage with one decimal. */
export const percent = (part: number, whole: number): number => (whole > 0 ? Math.round((part / whole) * 1000) / 10 : 0);
