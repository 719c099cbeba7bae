import { describe, expect, it } from "vitest"
import { callerMatches, callerOf, toCsv } from "../src/audit.ts"

const names = new Map([["token:0104d134-aaaa", "pet-agent"]])

describe("audit rows for people", () => {
  it("names the caller: the row's callerName, else the token list, else the identity as stored", () => {
    expect(callerOf({ identity: "token:0104d134-aaaa", callerName: "from-trail" }, names)).toBe("from-trail")
    expect(callerOf({ identity: "token:0104d134-aaaa" }, names)).toBe("pet-agent")
    expect(callerOf({ identity: "token:gone" }, names)).toBe("token:gone")
    expect(callerOf({ identity: "oauth:alice@example.com" }, names)).toBe("alice@example.com")
  })

  it("the live tail's caller filter: a case-insensitive substring of the identity or any name of the caller", () => {
    const row = { identity: "token:0104d134-aaaa" }
    expect(callerMatches("", row, names)).toBe(true)
    expect(callerMatches("PET-ag", row, names)).toBe(true)
    expect(callerMatches("0104d134", row, names)).toBe(true)
    expect(callerMatches("petz", row, names)).toBe(false)
    expect(callerMatches("ali", { identity: "oauth:x", callerSubject: "alice", callerName: null }, names)).toBe(true)
    expect(callerMatches("ali", { identity: "token:other", callerName: "bob" }, names)).toBe(false)
  })

  it("exports CSV with a header, quoting, and formulas defused", () => {
    const csv = toCsv([
      { id: 1, at: "2026-01-01T00:00:00.000Z", tool: "get_pet", outcome: "ok", identity: "token:x", caller: "a, b" },
      { id: 2, tool: "=HYPERLINK(\"x\")", outcome: "error", caller: "say \"hi\"", status: 404, meta: { k: 1 } }
    ])
    const [header, first, second] = csv.split("\r\n")
    // the leading columns, then every other field a row has, in first-seen order
    expect(header).toBe("id,at,tool,outcome,identity,caller,status,meta")
    expect(first).toBe("1,2026-01-01T00:00:00.000Z,get_pet,ok,token:x,\"a, b\",,")
    expect(second).toBe("2,,\"'=HYPERLINK(\"\"x\"\")\",error,,\"say \"\"hi\"\"\",404,\"{\"\"k\"\":1}\"")
    expect(csv.endsWith("\r\n")).toBe(true)
  })
})
