export * from "./codes.js";
export * from "./app-error.js";
