import { describe, expect, it } from "vitest";
import { costliestStatements } from "./pg-statements.js";

describe("costliestStatements", () => {
  it("adds a statement up over rounds and gives its execution time and calls per delivery, costliest first", () => {
    const rounds = [
      [
        { query: "insert into deliveries\n  select * from unnest($1)", calls: 10, execMs: 50 },
        { query: "select 1", calls: 100, execMs: 1 },
      ],
      [{ query: "insert into deliveries  select *   from unnest($1)", calls: 10, execMs: 30 }],
    ];
    expect(costliestStatements(rounds.flat(), 1000)).toEqual([
      { query: "insert into deliveries select * from unnest($1)", usPerDelivery: 80, callsPerDelivery: 0.02 },
      { query: "select 1", usPerDelivery: 1, callsPerDelivery: 0.1 },
    ]);
  });

  it("keeps the costliest `limit` and cuts long statements", () => {
    const samples = Array.from({ length: 5 }, (_, i) => ({ query: `${i}${"x".repeat(200)}`, calls: 1, execMs: i }));
    const top = costliestStatements(samples, 10, 2);
    expect(top.map((s) => s.usPerDelivery)).toEqual([400, 300]);
    expect(top[0]!.query).toHaveLength(160);
  });
});
