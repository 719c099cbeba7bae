import { describe, expect, it } from "vitest"
import { callerOf, identityFilter, toCsv } from "../src/audit.ts"

const names = new Map([["token:0104d134-aaaa", "pet-agent"]])

describe("audit rows for people", () => {
  it("names the caller: the row's tokenName, else the token list, else the identity as stored", () => {
    expect(callerOf({ identity: "token:0104d134-aaaa", tokenName: "from-trail" }, names)).toBe("from-trail")
    expect(callerOf({ identity: "token:0104d134-aaaa" }, names)).toBe("pet-agent")
    expect(callerOf({ identity: "token:gone" }, names)).toBe("token:gone")
    expect(callerOf({ identity: "oauth:alice@example.com" }, names)).toBe("alice@example.com")
  })

  it("a token's exact name filters by its identity; anything else is sent as typed", () => {
    expect(identityFilter("pet-agent", names)).toBe("token:0104d134-aaaa")
    expect(identityFilter("pet", names)).toBe("pet")
  })

  it("exports CSV with a header, quoting, and formulas defused", () => {
    const csv = toCsv([
      { id: 1, at: "2026-01-01T00:00:00.000Z", tool: "get_pet", outcome: "ok", identity: "token:x", caller: "a, b" },
      { id: 2, tool: "=HYPERLINK(\"x\")", outcome: "error", caller: "say \"hi\"", status: 404 }
    ])
    const [header, first, second] = csv.split("\r\n")
    expect(header).toBe(
      "id,at,tool,outcome,identity,caller,connection,status,durationMs,bytesIn,bytesOut,redactions,requestId,traceId"
    )
    expect(first).toBe("1,2026-01-01T00:00:00.000Z,get_pet,ok,token:x,\"a, b\",,,,,,,,")
    expect(second).toBe("2,,\"'=HYPERLINK(\"\"x\"\")\",error,,\"say \"\"hi\"\"\",,404,,,,,,")
    expect(csv.endsWith("\r\n")).toBe(true)
  })
})
