import { auth, jobs } from "@renderbus/contracts";
import { AppError } from "@renderbus/errors";
import { createRpcServer, devServiceIdentity, type AsyncService } from "@renderbus/rpc";

/** For the methods of a stand-in that a test does not expect the worker to call. */
export const notPartOfThisTest = async (): Promise<never> => {
  throw new AppError("INTERNAL_ERROR", "not part of this test");
};

export interface StandIns {
  /** The worker's config variables that point it at the stand-ins. */
  addresses: { JOBS_GRPC_ADDRESS: string; AUTH_GRPC_ADDRESS: string };
  stop(): Promise<void>;
}

/**
 * Stand-ins for the two services a worker calls, the jobs service and auth's billing, on 127.0.0.1: real gRPC servers
 * that check the worker's call tokens as the real ones do, answering with the handlers given.
 */
export async function startStandIns(handlers: { jobs: AsyncService<jobs.JobsServer>; billing: AsyncService<auth.BillingServer> }): Promise<StandIns> {
  const jobsRpc = createRpcServer(devServiceIdentity("jobs"));
  jobsRpc.add(jobs.JobsService, handlers.jobs);
  const billingRpc = createRpcServer(devServiceIdentity("auth"));
  billingRpc.add(auth.BillingService, handlers.billing);
  const [jobsPort, billingPort] = [await jobsRpc.listen(0), await billingRpc.listen(0)];
  return {
    addresses: { JOBS_GRPC_ADDRESS: `127.0.0.1:${jobsPort}`, AUTH_GRPC_ADDRESS: `127.0.0.1:${billingPort}` },
    stop: async () => {
      await jobsRpc.shutdown(100);
      await billingRpc.shutdown(100);
    },
  };
}
