export { createLocalObjectStore } from "./local-object-store.js";
export { createS3ObjectStore, ObjectStoreError, type S3ObjectStoreOptions } from "./s3-object-store.js";
export {
  isSafeObjectKey,
  ObjectTooLargeError,
  UnsafeObjectKeyError,
  type ObjectInfo,
  type ObjectStore,
  type PutStreamOptions,
  type StoredObject,
} from "./object-store.js";
export { createObjectStore, storageVariables, requireStorageSettings, type StorageConfig } from "./storage-config.js";
export { signOutputUrl, verifyOutputSignature } from "./signed-url.js";

// The names before the store held more than outputs (kept for code written against them).
export { createLocalObjectStore as createLocalOutputStore } from "./local-object-store.js";
export { isSafeObjectKey as isSafeOutputKey, type ObjectStore as OutputStore, type StoredObject as StoredOutput } from "./object-store.js";
