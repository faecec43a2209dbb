import type { auth } from "@renderbus/contracts";
import { AppError } from "@renderbus/errors";
import { creditsPerUnit, JOB_TYPES, MINIMUM_PRICE, pricedDurationMs, priceOf, type JobTypeName, type Price, type PriceInput } from "@renderbus/job-types";
import type { PromiseClient } from "@renderbus/rpc";
import { JobFailure } from "../job-failure.js";

/** A job's output is priced per started unit of this length (libs/job-types price.ts). */
const MS_PER_UNIT = 10_000;

/** What a job has reserved, and the output length that pays for. */
export interface Reservation {
  credits: number;
  /** Why, in `cost.breakdown` words. */
  breakdown: string;
  /**
   * The longest output the reservation pays for: the provider is stopped there (`-t`). Null for outputs priced
   * without a length (images, metadata).
   */
  coveredMs: number | null;
}

/** The least any job of the type costs: reserved at dispatch, before any input is downloaded. */
export function minimumReservation(type: JobTypeName): Reservation {
  const output = JOB_TYPES[type].output;
  if (output === "image" || output === "data") return { ...priceOf({ output }), coveredMs: null };
  return reservationFor({ output, durationMs: 0, height: null });
}

/**
 * The reservation for an estimated output (pure): whole 10 s units at the output's rate, at least one, so the
 * output length it covers is never zero. A reservation of N units covers N x 10 s, the most N units can buy.
 */
export function reservationFor(estimate: PriceInput): Reservation {
  if (estimate.output === "image" || estimate.output === "data") return { ...priceOf(estimate), coveredMs: null };
  const units = Math.max(1, Math.ceil(pricedDurationMs(estimate.durationMs) / MS_PER_UNIT));
  const credits = Math.max(MINIMUM_PRICE, units * creditsPerUnit(estimate.output, estimate.height));
  const { breakdown } = priceOf({ ...estimate, durationMs: units * MS_PER_UNIT });
  return { credits, breakdown, coveredMs: units * MS_PER_UNIT };
}

/** The price to report for a produced output; one with no measurable length is charged what was reserved for it. */
export function chargeFor(measured: PriceInput, reservation: Reservation): Price {
  if ((measured.output === "video" || measured.output === "audio") && (measured.durationMs === null || measured.durationMs === undefined)) {
    return { credits: reservation.credits, breakdown: reservation.breakdown };
  }
  return priceOf(measured);
}

/**
 * Makes the job's reservation `credits` in total (the ledger reserves only the difference to what the job holds).
 * @throws JobFailure INSUFFICIENT_CREDITS when the balance cannot cover it.
 */
export async function reserveJobCredits(
  billing: PromiseClient<auth.BillingClient>,
  request: { orgId: string; jobId: string; credits: number; breakdown: string },
): Promise<void> {
  try {
    await billing.reserveCredits({ orgId: request.orgId, jobId: request.jobId, credits: request.credits });
  } catch (error) {
    if (error instanceof AppError && error.code === "INSUFFICIENT_CREDITS") {
      throw new JobFailure("INSUFFICIENT_CREDITS", `The job needs ${request.credits} credits (${request.breakdown}); the balance is too low`);
    }
    throw error;
  }
}
