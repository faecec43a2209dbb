/**
 * Thrown (through the connect path) when a host is, or resolves to, an address the SSRF guard refuses. Webhook
 * attempts record its message; input downloads turn it into an INPUT_ERROR.
 */
export class BlockedAddressError extends Error {
  override readonly name = "BlockedAddressError";
  readonly code = "ERR_ADDRESS_BLOCKED";
  /**
   * @param host the host name or IP literal of the URL
   * @param address the refused address (the host itself for an IP literal)
   */
  constructor(
    readonly host: string,
    readonly address: string = host,
  ) {
    super(`refused to connect to a private, loopback or link-local address (${address})`);
  }
}
