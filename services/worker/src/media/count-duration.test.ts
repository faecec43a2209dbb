import { describe, expect, it } from "vitest";
import { durationFromCount } from "./count-duration.js";

describe("durationFromCount", () => {
  it("is the packet count over the frame rate, and null without either", () => {
    expect(durationFromCount({ streams: [{ nb_read_packets: "750", avg_frame_rate: "25/1", r_frame_rate: "25/1" }] })).toBe(30_000);
    expect(durationFromCount({ streams: [{ nb_read_packets: "900", avg_frame_rate: "0/0", r_frame_rate: "30000/1001" }] })).toBe(30_030);
    expect(durationFromCount({ streams: [{ nb_read_packets: "0", avg_frame_rate: "25/1" }] })).toBeNull();
    expect(durationFromCount({ streams: [{ nb_read_packets: "750", avg_frame_rate: "0/0", r_frame_rate: "0/0" }] })).toBeNull();
    expect(durationFromCount({ streams: [] })).toBeNull();
  });
});
