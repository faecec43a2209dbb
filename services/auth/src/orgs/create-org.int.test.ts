import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "@renderbus/ids";
import { parseConfig } from "@renderbus/config";
import { createTestDatabase, testInfra } from "@renderbus/testing";
import { authConfigSchema } from "../config.js";
import type { AuthResources } from "../auth-resources.js";
import { openAuthResources } from "../open-auth-resources.js";
import { OrgCreation, type OrganizationApi } from "./create-org.js";

/**
 * How `createOrg` hands an org's plan to Better Auth's `afterCreateOrganization` hook. The organization API here
 * stands in for the plugin's and runs the hook the way the plugin does (after writing the organization, in the same
 * call), so each case can say who creates which org while a `createOrg` call is in flight.
 */
describe("createOrg's plan hand-off", () => {
  let store: AuthResources;
  beforeAll(async () => {
    const config = parseConfig(authConfigSchema, { MODE: "test", EMAIL_VERIFICATION: "off", DATABASE_URL: await createTestDatabase("createorg"), NATS_URL: testInfra().natsUrl });
    store = await openAuthResources(config, "create-org-test");
  });
  afterAll(() => store?.close());

  const planOf = async (orgId: string) => (await store.db.selectFrom("orgs").select("plan").where("id", "=", orgId).executeTakeFirstOrThrow()).plan;

  /** What the plugin writes before its hook runs: the organization row (ours references it). */
  async function organizationRow(slug: string): Promise<string> {
    const id = newId("org");
    await store.db.insertInto("organization").values({ id, name: slug, slug, logo: null, metadata: null, createdAt: new Date() }).execute();
    return id;
  }

  /** The plugin's `createOrganization`: a new organization, then its hook; `during` runs inside the call. */
  function pluginApi(orgs: OrgCreation, during: (slug: string) => Promise<void> = async () => undefined): OrganizationApi {
    return {
      createOrganization: async ({ body }) => {
        const id = await organizationRow(body.slug);
        await orgs.afterCreateOrganization({ organization: { id, slug: body.slug }, user: { id: body.userId } });
        await during(body.slug);
        return { id };
      },
    };
  }

  it("creates our side of the org on the plan asked for", async () => {
    const orgs = new OrgCreation(store);
    orgs.useApi(pluginApi(orgs));
    const orgId = await orgs.createOrg({ name: "Acme", plan: "pro", ownerUserId: "usr_owner" });
    expect(await planOf(orgId)).toBe("pro");
  });

  it("starts an org created by anyone else on free, even one with the slug of an org being created", async () => {
    const orgs = new OrgCreation(store);
    const others: string[] = [];
    orgs.useApi(
      pluginApi(orgs, async (slug) => {
        // Another user creates an org through /auth/organization/create while this createOrg is in flight.
        const id = await organizationRow(`their-own-${newId("org").toLowerCase()}`);
        await orgs.afterCreateOrganization({ organization: { id, slug: "their-own-slug" }, user: { id: "usr_other" } });
        // (The real plugin refuses a taken slug; the hand-off does not rely on that.)
        const sameSlug = await organizationRow(`${slug}-again`);
        await orgs.afterCreateOrganization({ organization: { id: sameSlug, slug }, user: { id: "usr_other" } });
        others.push(id, sameSlug);
      }),
    );
    const orgId = await orgs.createOrg({ name: "Scale Co", plan: "scale", ownerUserId: "usr_scale_owner" });
    expect(await planOf(orgId)).toBe("scale");
    expect(await Promise.all(others.map(planOf))).toEqual(["free", "free"]);
  });

  it("forgets the plan once createOrg returns or fails", async () => {
    const orgs = new OrgCreation(store);
    let slugOfFailed = "";
    orgs.useApi({
      createOrganization: async ({ body }) => {
        slugOfFailed = body.slug;
        throw new Error("slug taken");
      },
    });
    await expect(orgs.createOrg({ name: "Failing", plan: "pro", ownerUserId: "usr_failing" })).rejects.toThrow("slug taken");
    const later = await organizationRow(slugOfFailed);
    await orgs.afterCreateOrganization({ organization: { id: later, slug: slugOfFailed }, user: { id: "usr_failing" } });
    expect(await planOf(later)).toBe("free");
  });

  it("refuses to create an org before the organization API is wired", async () => {
    await expect(new OrgCreation(store).createOrg({ name: "Early", plan: "free", ownerUserId: "usr_early" })).rejects.toThrow("the organization API is not wired");
  });
});
