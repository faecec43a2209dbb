import { describe, expect, it } from "vitest";
import { invitationEmail } from "./invitation-email.js";

const invitation = (orgName: string, inviterName: string) => ({
  id: "3f8a5a2e-1b7c-4d7e-9a55-0d1e2f3a4b5c",
  role: "admin",
  email: "grace@example.com",
  organization: { name: orgName },
  inviter: { user: { id: "usr_1", name: inviterName, email: "ada@example.com", emailVerified: true } },
});

describe("the invitation email", () => {
  it("names the inviter, the org and the role, and links to the dashboard page that accepts it", () => {
    const email = invitationEmail(invitation("Analytical Engines", "Ada"), "https://renderbus.example.com");
    expect(email.to).toBe("grace@example.com");
    expect(email.subject).toBe("Join Analytical Engines on Renderbus");
    expect(email.text).toContain('Ada (ada@example.com) invited you to the organization "Analytical Engines" on Renderbus, as admin.');
    expect(email.text).toContain("https://renderbus.example.com/app/invitations/3f8a5a2e-1b7c-4d7e-9a55-0d1e2f3a4b5c");
  });

  it("keeps names typed with line breaks on one bounded line (no header or paragraph of their own)", () => {
    const email = invitationEmail(invitation("Evil\r\nBcc: victim@example.com\r\n\r\nClick http://phish.example", `${"x".repeat(300)}\nEve`), "https://renderbus.example.com");
    expect(email.subject).not.toMatch(/[\r\n]/);
    expect(email.subject).toBe("Join Evil Bcc: victim@example.com Click http://phish.example on Renderbus");
    expect(email.text.split("\n")[0]).toMatch(/^x{80} \(ada@example\.com\) invited you/);
    expect(email.text.split("\n")).toHaveLength(7);
  });
});
