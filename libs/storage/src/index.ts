export { createLocalOutputStore } from "./local-output-store.js";
export { isSafeOutputKey, type OutputStore, type StoredOutput } from "./output-store.js";
export { signOutputUrl, verifyOutputSignature } from "./signed-url.js";
