/**
 * What Studio's end-to-end files share besides the browser (browser.ts): a
 * downstream pet API on loopback, the test gateway's URL, an admin token,
 * and admin API requests made by the test itself (not the browser).
 */
import { assert } from "@effect/vitest"
import { AdminTokens } from "@janus/storage"
import { Effect, Redacted } from "effect"
import { HttpServer } from "effect/http"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import type { Page } from "playwright-core"

export const WAIT = 15_000

/** A downstream pet API on loopback: GET /pets/{id} a pet, GET /pets a list, anything else 404. */
export const startDownstream = () =>
  new Promise<{ server: Server; url: string }>((resolve) => {
    const server = createServer((req, res) => {
      const pet = /^\/pets\/([^/?]+)/.exec(req.url ?? "")
      res.setHeader("content-type", "application/json")
      if (req.method === "GET" && pet !== null) {
        res.end(JSON.stringify({ id: decodeURIComponent(pet[1]!), name: "Rex" }))
      } else if (req.method === "GET" && (req.url ?? "").startsWith("/pets")) {
        res.end(JSON.stringify([{ id: "1", name: "Rex" }]))
      } else {
        res.statusCode = 404
        res.end("{}")
      }
    })
    server.listen(0, "127.0.0.1", () =>
      resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }))
  })

export const baseUrl = Effect.map(Effect.service(HttpServer.HttpServer), (server) => {
  if (server.address._tag === "UnixPathAddress") throw new Error("the test server listens on TCP")
  return `http://127.0.0.1:${server.address.port}`
})

/** A new admin token's plaintext. */
export const newAdminToken = (name: string) =>
  Effect.map(
    Effect.flatMap(Effect.service(AdminTokens), (tokens) => tokens.create({ name })),
    (created) => Redacted.value(created.plaintext)
  )

export const waitText = (page: Page, testId: string, text: string | RegExp) =>
  page.getByTestId(testId).filter({ hasText: text }).first().waitFor({ timeout: WAIT })

/** One admin API request from the test itself (not the browser): the JSON it answers, after checking the status. */
export const api = async (
  base: string,
  token: string,
  method: string,
  path: string,
  options: { body?: unknown; ifMatch?: number; status?: number } = {}
) => {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` }
  if (options.body !== undefined) headers["content-type"] = "application/json"
  if (options.ifMatch !== undefined) headers["if-match"] = `"${options.ifMatch}"`
  const response = await fetch(`${base}/api/v1/${path}`, {
    method,
    headers,
    body: options.body === undefined ? null : JSON.stringify(options.body)
  })
  const text = await response.text()
  assert.strictEqual(response.status, options.status ?? 200, `${method} ${path}: ${text}`)
  return text === "" ? undefined : JSON.parse(text)
}

/** The item of an admin collection named `name`, as the API has it now. */
export const byName = async (base: string, token: string, collection: string, name: string) => {
  const list: { items: Array<any> } = await api(base, token, "GET", `${collection}?limit=100`)
  const item = list.items.find((i) => i.name === name)
  assert.isDefined(item, `${collection} has ${name}`)
  return item
}
