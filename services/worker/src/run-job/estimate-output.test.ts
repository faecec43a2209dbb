import { describe, expect, it } from "vitest";
import { priceOf } from "@renderbus/job-types";
import { summarizeProbe, type MediaProbe } from "../media/probe.js";
import { estimateOutput } from "./estimate-output.js";

const source: MediaProbe = summarizeProbe({
  format: { format_name: "mov,mp4,m4a,3gp,3g2,mj2", duration: "127.04", size: "1000" },
  streams: [
    { index: 0, codec_type: "video", codec_name: "h264", width: 1920, height: 1080, avg_frame_rate: "30000/1001" },
    { index: 1, codec_type: "audio", codec_name: "aac", sample_rate: "48000", channels: 2 },
  ],
});

describe("estimateOutput", () => {
  it("estimates a transcode from the source length and the requested size", () => {
    expect(estimateOutput("transcode", {}, { source })).toEqual({ output: "video", durationMs: 127_040, height: 1080 });
    expect(estimateOutput("transcode", { width: 1280 }, { source })).toMatchObject({ height: 720 });
    expect(estimateOutput("transcode", { height: 2160 }, { source })).toMatchObject({ height: 2160 });
    expect(priceOf(estimateOutput("transcode", {}, { source }))).toEqual({ credits: 26, breakdown: "2m7s video @1080p" });
  });

  it("estimates audio by length and images and metadata at the minimum", () => {
    expect(estimateOutput("audio.extract", {}, { source })).toEqual({ output: "audio", durationMs: 127_040 });
    expect(estimateOutput("thumbnail", {}, { source })).toEqual({ output: "image" });
    expect(estimateOutput("qr.generate", { content: "x" }, {})).toEqual({ output: "image" });
    expect(estimateOutput("extract.metadata", {}, { source })).toEqual({ output: "data" });
    expect(estimateOutput("caption.burn", {}, { source })).toMatchObject({ output: "video", height: 1080 });
  });

  it("takes the measured source length over the container's when one is given", () => {
    expect(estimateOutput("transcode", {}, { source }, 30_000)).toMatchObject({ durationMs: 30_000 });
    expect(estimateOutput("audio.extract", {}, { source }, null)).toEqual({ output: "audio", durationMs: 0 });
  });
});

describe("summarizeProbe", () => {
  it("summarizes format and streams", () => {
    expect(source).toMatchObject({ width: 1920, height: 1080, durationMs: 127_040, hasVideo: true, hasAudio: true });
    expect(source.streams[0]).toMatchObject({ type: "video", codec: "h264", fps: 29.97 });
    expect(source.streams[1]).toMatchObject({ type: "audio", sampleRate: 48_000, channels: 2, fps: null });
  });

  it("does not count cover art as video", () => {
    const mp3 = summarizeProbe({ format: { format_name: "mp3", duration: "3" }, streams: [
      { index: 0, codec_type: "audio", codec_name: "mp3" },
      { index: 1, codec_type: "video", codec_name: "mjpeg", width: 300, height: 300, disposition: { attached_pic: 1 } },
    ] });
    expect(mp3).toMatchObject({ hasVideo: false, width: null, height: null, hasAudio: true });
  });
});
