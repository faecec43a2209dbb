export * from "./bus.js";
export * from "./streams.js";
