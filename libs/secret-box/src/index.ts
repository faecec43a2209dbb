export * from "./secret-box.js";
export * from "./keyring-config.js";
