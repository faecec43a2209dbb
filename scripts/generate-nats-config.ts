/**
 * `npm run nats:config`: writes deploy/nats/authorization.conf from the permission matrix in
 * libs/bus/src/nats-permissions.ts (run it after changing what a service publishes or subscribes).
 */
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { DEPLOY_AUTHORIZATION_FILE, deployNatsAuthorization } from "../libs/bus/src/nats-permissions.js";

const repoRoot = resolve(import.meta.dirname, "..");
writeFileSync(join(repoRoot, DEPLOY_AUTHORIZATION_FILE), deployNatsAuthorization());
console.log(`wrote ${DEPLOY_AUTHORIZATION_FILE}`);
