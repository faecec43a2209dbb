/** Display helpers shared by the pages. Pure, so they are unit-tested (test/format.test.ts). */

export const TERMINAL_STATUSES = new Set(["completed", "failed", "cancelled"]);

export function isTerminal(status: string): boolean {
  return TERMINAL_STATUSES.has(status);
}

/** Epoch ms -> "2026-11-23 18:40:12" in the viewer's time zone; "-" for null. */
export function formatTime(epochMs: number | null | undefined): string {
  if (epochMs === null || epochMs === undefined) return "-";
  const date = new Date(epochMs);
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
}

/** Milliseconds -> "850 ms", "12.4 s", "2m 7s", "1h 3m". */
export function formatDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || ms < 0) return "-";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const totalSeconds = Math.round(ms / 1000);
  const hours = Math.floor(totalSeconds / 3600);
  const minutes = Math.floor((totalSeconds % 3600) / 60);
  const seconds = totalSeconds % 60;
  return hours > 0 ? `${hours}h ${minutes}m` : `${minutes}m ${seconds}s`;
}

/** Bytes -> "812 B", "1.5 KB", "20.3 MB". */
export function formatBytes(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined) return "-";
  const units = ["B", "KB", "MB", "GB", "TB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${units[unit]}`;
}

/** 1 -> "1 credit", 1900 -> "1,900 credits". */
export function creditCount(credits: number): string {
  return `${credits.toLocaleString("en-US")} ${Math.abs(credits) === 1 ? "credit" : "credits"}`;
}

/** Credits -> "1,900 credits ($19.00)"; 1 credit = $0.01. */
export function formatCredits(credits: number): string {
  const dollars = (credits / 100).toLocaleString("en-US", { style: "currency", currency: "USD" });
  return `${creditCount(credits)} (${dollars})`;
}

/** Which preview element fits a result, from the job type's output kind or, failing that, the file extension. */
export function previewKind(output: string | undefined, url: string): "image" | "video" | "audio" | "none" {
  if (output === "image" || output === "video" || output === "audio") return output;
  const path = url.split("?")[0] ?? "";
  if (/\.(png|jpe?g|webp|gif|svg)$/i.test(path)) return "image";
  if (/\.(mp4|webm|mov|mkv)$/i.test(path)) return "video";
  if (/\.(mp3|aac|wav|opus|m4a|ogg)$/i.test(path)) return "audio";
  return "none";
}
