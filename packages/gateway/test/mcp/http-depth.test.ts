import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { HttpServer } from "effect/http"
import * as GatewayTesting from "../../src/testing.ts"

layer(GatewayTesting.layer(), { timeout: 60_000, excludeTestServices: true })("/mcp body depth", (it) => {
  it.effect("a JSON body nested deeper than the limit is a 400 that says so, before it is parsed", () =>
    Effect.gen(function*() {
      const url = yield* HttpServer.addressFormattedWith((base) => Effect.succeed(new URL("/mcp", base)))
      const deep = "[".repeat(10_000) + "]".repeat(10_000)
      const body = `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":${deep}}}`
      const response = yield* Effect.promise(() =>
        fetch(url, {
          method: "POST",
          headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
          body
        })
      )
      assert.strictEqual(response.status, 400)
      const text = yield* Effect.promise(() => response.text())
      assert.include(text, "nest")
      assert.notInclude(text, "at ")
    }))
})
