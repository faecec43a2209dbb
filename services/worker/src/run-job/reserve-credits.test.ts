import { describe, expect, it } from "vitest";
import { priceOf } from "@renderbus/job-types";
import { capOutputDuration } from "../providers/provider.js";
import { chargeFor, minimumReservation, reservationFor } from "./reserve-credits.js";

describe("reservations", () => {
  it("reserves the minimum price of every job type before anything is downloaded", () => {
    expect(minimumReservation("transcode")).toEqual({ credits: 1, breakdown: "0m10s video", coveredMs: 10_000 });
    expect(minimumReservation("audio.extract")).toMatchObject({ credits: 1, coveredMs: 10_000 });
    expect(minimumReservation("thumbnail")).toEqual({ credits: 1, breakdown: "image", coveredMs: null });
    expect(minimumReservation("extract.metadata")).toEqual({ credits: 1, breakdown: "metadata", coveredMs: null });
  });

  it("reserves whole 10 s units at the output's rate and covers exactly the length they buy", () => {
    expect(reservationFor({ output: "video", durationMs: 1_000, height: 240 })).toEqual({ credits: 1, breakdown: "0m10s video @240p", coveredMs: 10_000 });
    expect(reservationFor({ output: "video", durationMs: 30_040, height: 240 })).toMatchObject({ credits: 3, coveredMs: 30_000 });
    expect(reservationFor({ output: "video", durationMs: 30_050, height: 1080 })).toMatchObject({ credits: 8, coveredMs: 40_000 });
    // A zero-length estimate at a 2-credit rate still covers one unit rather than an empty output.
    expect(reservationFor({ output: "video", durationMs: 0, height: 1080 })).toMatchObject({ credits: 2, coveredMs: 10_000 });
    expect(reservationFor({ output: "audio", durationMs: 127_040 })).toMatchObject({ credits: 13, coveredMs: 130_000 });
  });

  it("never covers an output the reservation could not pay for", () => {
    for (const height of [240, 720, 1080, 2160]) {
      for (const durationMs of [0, 999, 10_000, 10_049, 10_050, 59_990, 127_040]) {
        const reservation = reservationFor({ output: "video", durationMs, height });
        expect(priceOf({ output: "video", durationMs: reservation.coveredMs, height }).credits).toBeLessThanOrEqual(reservation.credits);
      }
    }
  });

  it("charges the price of the output produced, and the reservation for a media output with no measurable length", () => {
    const reservation = reservationFor({ output: "video", durationMs: 30_000, height: 240 });
    expect(chargeFor({ output: "video", durationMs: 10_000, height: 240 }, reservation)).toEqual({ credits: 1, breakdown: "0m10s video @240p" });
    expect(chargeFor({ output: "video", durationMs: null, height: 240 }, reservation)).toEqual({ credits: 3, breakdown: "0m30s video @240p" });
    expect(chargeFor({ output: "image" }, reservation)).toEqual({ credits: 1, breakdown: "image" });
  });
});

describe("capOutputDuration", () => {
  it("puts -t with the covered seconds just before the output path, and nothing without a cap", () => {
    expect(capOutputDuration(["-i", "/w/in", "-c:v", "libx264", "/w/out.mp4"], 30_000)).toEqual(["-i", "/w/in", "-c:v", "libx264", "-t", "30.000", "/w/out.mp4"]);
    expect(capOutputDuration(["-i", "/w/in", "/w/out.png"], null)).toEqual(["-i", "/w/in", "/w/out.png"]);
    expect(() => capOutputDuration(["-i", "/w/in", "/w/out.mp4"], 0)).toThrow();
  });
});
