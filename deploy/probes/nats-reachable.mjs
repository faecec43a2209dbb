// Exit 0 when a TCP connection to NATS_URL's host and port opens within 2 s, else 1. The worker has no port of its
// own; it is ready to take jobs when it can reach JetStream. Plain JavaScript so the probe starts fast.
import { connect } from "node:net";

const url = new URL(process.env.NATS_URL ?? "nats://127.0.0.1:4222");
const socket = connect({ host: url.hostname, port: Number(url.port || 4222), timeout: 2000 });
socket.on("connect", () => {
  socket.destroy();
  process.exit(0);
});
socket.on("timeout", () => process.exit(1));
socket.on("error", () => process.exit(1));
