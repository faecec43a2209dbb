import { describe, expect, it } from "vitest";
import { creditCount, formatBytes, formatCredits, formatDuration, isTerminal, previewKind } from "../src/format.js";

describe("dashboard display helpers", () => {
  it("treats completed, failed and cancelled as final", () => {
    expect(["waiting", "dispatched", "running", "completed", "failed", "cancelled"].filter(isTerminal)).toEqual(["completed", "failed", "cancelled"]);
  });

  it("writes durations, sizes and credits the way people read them", () => {
    expect([850, 12_400, 127_000, 3_780_000].map(formatDuration)).toEqual(["850 ms", "12.4 s", "2m 7s", "1h 3m"]);
    expect(formatDuration(null)).toBe("-");
    expect([812, 1536, 20_300_000].map(formatBytes)).toEqual(["812 B", "1.5 KB", "19.4 MB"]);
    expect(creditCount(1)).toBe("1 credit");
    expect(formatCredits(1900)).toBe("1,900 credits ($19.00)");
  });

  it("previews results by the job type's output kind, or by the file extension when the kind is unknown", () => {
    expect(previewKind("image", "https://x/outputs/a.bin?sig=1")).toBe("image");
    expect(previewKind("data", "https://x/outputs/a.json")).toBe("none");
    expect(previewKind(undefined, "https://x/outputs/a.webm?expires=1")).toBe("video");
    expect(previewKind(undefined, "https://x/outputs/a.mp3")).toBe("audio");
  });
});
