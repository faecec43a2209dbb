export * from "./payloads.js";
