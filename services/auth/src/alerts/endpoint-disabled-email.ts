import type { Email } from "../email/mailer.js";
import { oneLine } from "../email/one-line.js";

/** What the email says about the endpoint (from the dispatcher's EndpointDisabled). */
export interface DisabledEndpoint {
  orgName: string;
  endpointId: string;
  url: string;
  reason: string;
  disabledAt: number;
}

/** The dashboard page that lists the org's endpoints and re-enables one (apps/dashboard WebhooksPage). */
export function webhooksPageUrl(publicUrl: string): string {
  return new URL("/app/settings/webhooks", publicUrl).toString();
}

/**
 * The email to an owner or admin of an org whose endpoint the dispatcher disabled: which one, why, what happens to
 * its deliveries meanwhile, and where to turn it back on. The URL and the org's name were typed by users: each goes in
 * as one bounded line, never as a header.
 */
export function endpointDisabledEmail(to: string, endpoint: DisabledEndpoint, publicUrl: string): Email {
  const org = oneLine(endpoint.orgName, 80);
  const url = oneLine(endpoint.url, 500);
  return {
    to,
    subject: `Webhook endpoint disabled in ${org}`,
    text: [
      `Renderbus disabled a webhook endpoint of the organization "${org}" on ${new Date(endpoint.disabledAt).toUTCString()}:`,
      "",
      `  ${url}`,
      `  (${oneLine(endpoint.endpointId, 40)})`,
      "",
      `Why: ${oneLine(endpoint.reason, 300)}.`,
      "",
      "While it is disabled, its new deliveries are stored as skipped and nothing is sent to it. Once the receiver",
      "works again, enable the endpoint on the Webhooks page, then recover the deliveries it missed:",
      "",
      webhooksPageUrl(publicUrl),
      "",
      "You get this email as an owner or admin of the organization.",
    ].join("\n"),
  };
}
