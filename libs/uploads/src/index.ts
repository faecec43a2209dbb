export * from "./upload-store.js";
export * from "./tus-upload-store.js";
export * from "./local-upload-store.js";
export * from "./s3-upload-store.js";
export * from "./upload-store-config.js";
