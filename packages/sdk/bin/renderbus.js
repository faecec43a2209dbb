#!/usr/bin/env node
console.error("renderbus: not built yet");
process.exit(1);
