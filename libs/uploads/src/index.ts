export * from "./upload-store.js";
export * from "./local-upload-store.js";
