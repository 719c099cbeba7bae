/**
 * One classification of a call's outcome, used by the audit record, the call
 * metrics and the span alike: the caller's mistakes are `invalid` (never an
 * `error` that feeds the error-ratio alert), a gateway refusal is its reason,
 * and an admission refusal has the same name in the audit row and in
 * `janus_admission_refusals_total`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Exit } from "effect"
import * as CallOutcome from "../../src/calls/CallOutcome.ts"
import { ProtocolError } from "../../src/mcp/JsonRpc.ts"
import { InvalidToolArguments, ToolCallRefused, ToolNotFound } from "../../src/mcp/ToolCatalog.ts"

const failed = (error: unknown) => Exit.fail(error)
const protocol = (code: number) => failed(new ProtocolError({ code, message: "x", status: 200 }))

describe("CallOutcome", () => {
  it("results: ok, or error for an isError result", () => {
    assert.strictEqual(CallOutcome.ofExit(Exit.succeed({ content: [] })), "ok")
    assert.strictEqual(CallOutcome.ofExit(Exit.succeed({ content: [], isError: true })), "error")
    assert.strictEqual(CallOutcome.ofExit(Exit.succeed(null)), "ok")
  })

  it("the caller's mistakes are invalid: arguments, unknown tools, Invalid Params and Resource not found", () => {
    assert.strictEqual(CallOutcome.ofExit(failed(new InvalidToolArguments({ name: "t", detail: "d" }))), "invalid")
    assert.strictEqual(CallOutcome.ofExit(failed(new ToolNotFound({ name: "t" }))), "invalid")
    // an upstream's answer to resources/read or prompts/get: -32602 Invalid params, -32002 Resource not found
    assert.strictEqual(CallOutcome.ofExit(protocol(-32602)), "invalid")
    assert.strictEqual(CallOutcome.ofExit(protocol(-32002)), "invalid")
    assert.strictEqual(CallOutcome.ofExit(protocol(-32603)), "error")
    assert.strictEqual(CallOutcome.ofExit(protocol(-32000)), "error")
  })

  it("a gateway refusal is its reason; an unavailable tool is an error", () => {
    for (const reason of ["denied", "rate_limited", "shed", "breaker_open", "timeout"] as const) {
      assert.strictEqual(CallOutcome.ofExit(failed(new ToolCallRefused({ name: "t", reason, detail: "d" }))), reason)
    }
    assert.strictEqual(
      CallOutcome.ofExit(failed(new ToolCallRefused({ name: "t", reason: "unavailable", detail: "d" }))),
      "error"
    )
  })

  it("defects, interruptions and other errors are errors", () => {
    assert.strictEqual(CallOutcome.ofExit(Exit.die(new Error("boom"))), "error")
    assert.strictEqual(CallOutcome.ofExit(Exit.failCause(Cause.interrupt())), "error")
    assert.strictEqual(CallOutcome.ofExit(failed(new Error("other"))), "error")
  })

  it("admission refusals: one name per HTTP status for the audit row and the refusal metric", () => {
    assert.strictEqual(CallOutcome.ofAdmissionRefusal(400), "unauthenticated")
    assert.strictEqual(CallOutcome.ofAdmissionRefusal(401), "unauthenticated")
    // was `forbidden` in the metric and `denied` in the audit
    assert.strictEqual(CallOutcome.ofAdmissionRefusal(403), "denied")
    assert.strictEqual(CallOutcome.ofAdmissionRefusal(429), "rate_limited")
    // the token store or the provider's keys unavailable: was `shed` in the metric and `error` in the audit
    assert.strictEqual(CallOutcome.ofAdmissionRefusal(503), "error")
  })
})
