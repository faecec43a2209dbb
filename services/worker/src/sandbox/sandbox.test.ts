import { describe, expect, it } from "vitest";
import { bwrapArgs, prlimitArgs, sandboxCommand, type SandboxSettings } from "./sandbox.js";

const settings: SandboxSettings = { mode: "bwrap", bwrapPath: "/usr/bin/bwrap", prlimitPath: "/usr/bin/prlimit", memoryBytes: 1024 ** 3, processes: 64 };
const limits = { cpuSeconds: 90, fileSizeBytes: 5000 };

describe("sandboxCommand", () => {
  it("wraps the command in prlimit, then bwrap, with the limits and only the sandbox's environment", () => {
    const wrapped = sandboxCommand("ffmpeg", ["-i", "/tmp/job/in.mp4"], { workDir: "/tmp/job", limits, settings, extraEnv: { SVT_LOG: "1" } });
    expect(wrapped.command).toBe("/usr/bin/prlimit");
    expect(wrapped.args.slice(0, 6)).toEqual([`--as=${1024 ** 3}`, "--cpu=90", "--fsize=5000", "--nproc=64", "--", "/usr/bin/bwrap"]);
    expect(wrapped.args.slice(-3)).toEqual(["ffmpeg", "-i", "/tmp/job/in.mp4"]);
    expect(wrapped.env).toEqual({ PATH: "/usr/local/bin:/usr/bin:/bin", MALLOC_ARENA_MAX: "2", SVT_LOG: "1" });
  });

  it("without bwrap still applies the limits and the environment", () => {
    const wrapped = sandboxCommand("ffprobe", ["x"], { workDir: "/tmp/job", limits, settings: { ...settings, mode: "none" } });
    expect([wrapped.command, ...wrapped.args]).toEqual(["/usr/bin/prlimit", ...prlimitArgs({ ...limits, memoryBytes: 1024 ** 3, processes: 64 }), "ffprobe", "x"]);
    expect(Object.keys(wrapped.env).sort()).toEqual(["MALLOC_ARENA_MAX", "PATH"]);
  });
});

describe("bwrapArgs", () => {
  it("unshares everything, drops capabilities, and binds the job's directory writable after a private /tmp", () => {
    const args = bwrapArgs("/tmp/job", { PATH: "/usr/bin" });
    expect(args.slice(0, 5)).toEqual(["--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]);
    const joined = args.join(" ");
    expect(joined).toContain("--ro-bind /usr /usr");
    expect(joined.indexOf("--tmpfs /tmp")).toBeLessThan(joined.indexOf("--bind /tmp/job /tmp/job"));
    expect(joined).toContain("--clearenv --setenv PATH /usr/bin");
    expect(joined).not.toMatch(/--(ro-)?bind \/ |--share-net|--bind \/etc /);
  });
});
