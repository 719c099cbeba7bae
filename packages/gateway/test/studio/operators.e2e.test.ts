/**
 * Studio for operators, in Chromium (issue #20): every page at 1400x900 and
 * at 390x844 without sideways scrolling and without serious or critical
 * axe-core violations; feedback (toasts, coloured outcomes, "Copied");
 * forms (rules shown first, errors in words once, pickers, refusals of what
 * does not exist); secret delete, an MCP connection's tool prefix, the
 * settings' sources, the full MCP URL with client snippets, the favicon;
 * the overview's time range and per-tool figures linked to the filtered
 * audit; the audit's callers by name, empty state, call details and export;
 * Try with a minted short-lived token. Phone screenshots go to
 * docs/screenshots with UPDATE_SCREENSHOTS=1 (see browser.ts).
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { Server } from "node:http"
import type { Browser } from "playwright-core"
import { afterAll, beforeAll } from "vitest"
import * as GatewayTesting from "../../src/testing.ts"
import {
  axeViolations,
  browserAvailable,
  focused,
  go,
  horizontalOverflow,
  launch,
  PAGES,
  screenshot,
  signIn,
  watchErrors
} from "./browser.ts"
import { api, baseUrl, newAdminToken, startDownstream, WAIT, waitText } from "./support.ts"

const PHONE = { width: 390, height: 844 }
const DESKTOP = { width: 1400, height: 900 }

const gateway = GatewayTesting.layer({ config: { JANUS_ALLOW_ANONYMOUS: false } })

/** A write through the admin API expecting `status`. */
const write = (base: string, admin: string, method: string, path: string, body: unknown, status: number) =>
  api(base, admin, method, path, { body, status })

/** A tools/call on /mcp with a client token. */
const callTool = (base: string, token: string, name: string, args: Record<string, unknown>) =>
  fetch(`${base}/mcp`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2026-07-28",
      "mcp-method": "tools/call",
      "mcp-name": name
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: {
        name,
        arguments: args,
        _meta: {
          "io.modelcontextprotocol/protocolVersion": "2026-07-28",
          "io.modelcontextprotocol/clientCapabilities": {}
        }
      }
    })
  }).then((r) => r.text())

const available = browserAvailable()
let browser: Browser | undefined
let downstream: { server: Server; url: string } | undefined

beforeAll(async () => {
  if (!available) return
  browser = await launch()
  downstream = await startDownstream()
}, 60_000)
afterAll(async () => {
  await browser?.close()
  await new Promise((resolve) => downstream === undefined ? resolve(undefined) : downstream.server.close(resolve))
})

const newPage = async (viewport: { width: number; height: number }) => {
  const context = await browser!.newContext({ viewport, permissions: ["clipboard-read", "clipboard-write"] })
  const page = await context.newPage()
  page.setDefaultTimeout(WAIT)
  page.on("dialog", (dialog) => void dialog.accept())
  const notFound: Array<string> = []
  page.on("response", (r) => {
    if (r.status() === 404) notFound.push(new URL(r.url()).pathname)
  })
  return { page, errors: watchErrors(page), notFound, close: () => context.close() }
}

/** What every page is checked on after data exists: a pets connection and endpoint, a token, calls, a secret. */
const arrange = async (base: string, admin: string) => {
  await write(base, admin, "PUT", "secrets/pets-key", { value: "s3cr3t-pets" }, 201)
  const pets = await write(base, admin, "POST", "connections", {
    kind: "rest",
    name: "pets",
    baseUrl: downstream!.url,
    egressAllowList: ["127.0.0.1"]
  }, 201)
  await write(base, admin, "POST", "endpoints", {
    connectionId: pets.id,
    name: "get_pet",
    method: "GET",
    pathTemplate: "/pets/{id}",
    inputSchema: { type: "object", required: ["id"], properties: { id: { type: "string" } } },
    arguments: { id: "path" }
  }, 201)
  await write(base, admin, "POST", "endpoints", {
    connectionId: pets.id,
    name: "list_owners",
    method: "GET",
    pathTemplate: "/owners",
    inputSchema: { type: "object" }
  }, 201)
  await write(base, admin, "POST", "virtual-servers", { name: "pets-only", tools: ["get_pet"] }, 201)
  const client = await write(base, admin, "POST", "client-tokens", { name: "pet-agent" }, 201)
  await callTool(base, client.token, "get_pet", { id: "7" })
  await callTool(base, client.token, "list_owners", {})
  return client.token as string
}

const suite = available ? layer(gateway, { timeout: 180_000, excludeTestServices: true }) : undefined
if (suite === undefined) describe.skip("Studio for operators (no Chromium)", () => it("skipped", () => undefined))
else {
  suite("Studio for operators", (it) => {
    it.effect(
      "every page at 390x844 and 1400x900: no sideways scroll, no serious axe violation, a favicon",
      () =>
        Effect.gen(function*() {
          const base = yield* baseUrl
          const admin = yield* newAdminToken("operators e2e")
          yield* Effect.promise(async () => {
            await arrange(base, admin)
            for (const viewport of [PHONE, DESKTOP]) {
              const { page, errors, notFound, close } = await newPage(viewport)
              try {
                await signIn(page, base, admin)
                for (const [path, title] of PAGES) {
                  await go(page, title)
                  assert.strictEqual(new URL(page.url()).pathname, path)
                  // let lists and charts load and lay out (the event stream stays open: no "network idle")
                  await page.waitForTimeout(700)
                  const { overflow, wide } = await horizontalOverflow(page)
                  assert.strictEqual(
                    overflow,
                    0,
                    `${path} at ${viewport.width} px scrolls sideways: ${wide.join(", ")}`
                  )
                  assert.deepStrictEqual(await axeViolations(page), [], `${path} at ${viewport.width} px`)
                  if (viewport === PHONE) await screenshot(page, `phone-${path === "/" ? "overview" : path.slice(1)}`)
                }
                // the sign-in page too
                if (viewport === PHONE) {
                  await page.getByRole("button", { name: "Sign out" }).click()
                  await page.getByRole("heading", { name: "Janus Studio" }).waitFor()
                  assert.strictEqual((await horizontalOverflow(page)).overflow, 0, "sign-in at 390 px")
                  assert.deepStrictEqual(await axeViolations(page), [], "sign-in")
                }
                assert.deepStrictEqual(notFound, [], "no request is a 404 (the favicon is served)")
                assert.deepStrictEqual(errors, [])
              } finally {
                await close()
              }
            }
            const icon = await fetch(`${base}/favicon.svg`)
            assert.strictEqual(icon.status, 200)
            assert.strictEqual(icon.headers.get("content-type"), "image/svg+xml")
          })
        }),
      150_000
    )

    it.effect(
      "on a phone: feedback, forms in words, pickers, secrets, tool prefix, MCP snippets",
      () =>
        Effect.gen(function*() {
          const base = yield* baseUrl
          const admin = yield* newAdminToken("operators e2e")
          yield* Effect.promise(async () => {
            const { page, errors, close } = await newPage(PHONE)
            try {
              await signIn(page, base, admin, "/connections")
              await page.getByRole("heading", { level: 1, name: "Connections" }).waitFor()

              // the rules of a field are shown before a mistake; the error after one is in words, once
              await page.getByRole("button", { name: "New connection" }).click()
              const form = page.getByRole("form", { name: "New connection" })
              assert.strictEqual(
                await focused(page, "aria-label", "form"),
                "New connection",
                "focus moved into the form that opened"
              )
              await form.getByText("1 to 64 letters, digits").first().waitFor()
              await form.getByLabel("Name").fill("Pet Store")
              await form.getByLabel("Base URL").fill(downstream!.url)
              await form.getByLabel("Egress allow-list").fill("127.0.0.1")
              await form.getByLabel("Auth scheme").selectOption("bearer")
              // the secret is chosen among those that exist; none chosen is "required"
              assert.includeMembers(
                await form.getByLabel("Secret", { exact: true }).locator("option").allTextContents(),
                ["(choose a secret)", "pets-key"]
              )
              await form.getByRole("button", { name: "Create connection" }).click()
              const alert = form.getByRole("alert")
              await alert.waitFor()
              const said = (await alert.textContent())!
              assert.include(said, "1 to 64 letters, digits")
              assert.notInclude(said, "^[A-Za-z0-9]", "no raw pattern")
              assert.strictEqual(said.split("1 to 64 letters").length, 2, `said once: ${said}`)
              await page.getByTestId("toast-error").first().waitFor()
              await form.getByLabel("Name").fill("pets2")
              await form.getByRole("button", { name: "Create connection" }).click()
              await form.getByRole("alert").filter({ hasText: "required" }).waitFor()
              await form.getByLabel("Auth scheme").selectOption("none")
              await form.getByRole("button", { name: "Create connection" }).click()
              await page.getByTestId("toast-success").filter({ hasText: "Created pets2" }).waitFor()

              // a test coloured by outcome: a 404 from the base URL is reachable, not a success
              await page.getByRole("button", { name: "Test pets2" }).click()
              await waitText(page, "test-pets2", "Reachable, but not a success: HTTP 404")
              assert.strictEqual(await page.getByTestId("test-pets2").getAttribute("data-outcome"), "warn")
              assert.isTrue(
                await page.getByRole("button", { name: "Delete pets2" }).isVisible(),
                "row buttons on screen"
              )

              // an MCP connection's tool names: a prefix of its own
              await page.getByRole("button", { name: "New connection" }).click()
              const mcp = page.getByRole("form", { name: "New connection" })
              await mcp.getByLabel("Kind").selectOption("mcp")
              await mcp.getByLabel("Name").fill("remote")
              await mcp.getByLabel("MCP server URL").fill("https://mcp.example/mcp")
              await mcp.getByLabel("Tool naming").selectOption("custom")
              await mcp.getByLabel("Tool prefix").fill("rm_")
              await mcp.getByRole("button", { name: "Create connection" }).click()
              await page.getByTestId("toast-success").filter({ hasText: "Created remote" }).waitFor()
              const remote = (await api(base, admin, "GET", "connections?limit=100")).items.find((c: any) =>
                c.name === "remote"
              )
              assert.strictEqual(remote.toolPrefix, "rm_")

              // a token's tools are picked among those that exist; a name that does not is refused by the API
              await write(base, admin, "POST", "client-tokens", { name: "typo", allowedTools: ["demo_tim"] }, 422)
              await go(page, "Tokens")
              const tokenForm = page.getByRole("form", { name: "New client token" })
              await tokenForm.getByLabel("Name").fill("remote-only")
              await tokenForm.getByRole("checkbox", { name: "remote/*" }).check()
              await tokenForm.getByRole("button", { name: "Create client token" }).click()
              await page.getByTestId("new-token").waitFor()
              await page.getByRole("button", { name: "Copy token" }).click()
              await page.getByRole("button", { name: "Copied: Copy token" }).waitFor()
              await page.getByTestId("toast-success").filter({ hasText: "Copied" }).first().waitFor()
              const saved = (await api(base, admin, "GET", "client-tokens?limit=100")).items.find((t: any) =>
                t.name === "remote-only"
              )
              assert.deepStrictEqual(saved.allowedTools, ["remote/*"])
              await page.getByRole("button", { name: "Done" }).click()

              // secrets: set, then delete
              await go(page, "Settings")
              await page.getByLabel("Secret name").fill("old-key")
              await page.getByLabel("Secret value").fill("v4lue")
              await page.getByRole("button", { name: "Save secret" }).click()
              await waitText(page, "secrets", "old-key")
              await page.getByRole("button", { name: "Delete old-key" }).click()
              await page.getByTestId("toast-success").filter({ hasText: "Deleted secret old-key" }).waitFor()
              await page.getByTestId("secrets").filter({ hasText: "old-key" }).waitFor({ state: "detached" })
              const master = page.getByTestId("config").locator("tr").filter({ hasText: "JANUS_MASTER_KEY" }).first()
              assert.notInclude(await master.textContent(), "null")

              // the full MCP URL with copy, and client configuration, on virtual servers and the overview
              await write(base, admin, "POST", "virtual-servers", { name: "remote-vs", tools: ["remote/*"] }, 201)
              await go(page, "Virtual servers")
              const endpoint = page.getByTestId("mcp-url-remote-vs")
              await endpoint.getByText(`${base}/servers/remote-vs/mcp`).first().waitFor()
              await endpoint.getByRole("button", { name: "Copy URL of remote-vs" }).click()
              assert.strictEqual(
                await page.evaluate("navigator.clipboard.readText()"),
                `${base}/servers/remote-vs/mcp`
              )
              await endpoint.getByText("Client configuration for remote-vs").click()
              const snippets = (await endpoint.textContent())!
              assert.include(snippets, "\"mcpServers\"")
              assert.include(snippets, "mcp-remote")
              assert.include(snippets, "@modelcontextprotocol/inspector")
              await go(page, "Overview")
              await page.getByTestId("mcp-url").getByText(`${base}/mcp`).first().waitFor()
              assert.strictEqual(
                (await horizontalOverflow(page)).overflow,
                0,
                "snippets open: still no sideways scroll"
              )
              assert.deepStrictEqual(errors, [])
            } finally {
              await close()
            }
          })
        }),
      90_000
    )

    it.effect(
      "overview ranges and per-tool figures, linked to the audit; call details, export; Try with a minted token",
      () =>
        Effect.gen(function*() {
          const base = yield* baseUrl
          const admin = yield* newAdminToken("operators e2e")
          yield* Effect.promise(async () => {
            const { page, errors, close } = await newPage(DESKTOP)
            try {
              await signIn(page, base, admin)
              // the window is named on every figure, and changes with the range
              await page.getByText("Error rate (last 5 min)").waitFor()
              await page.getByRole("button", { name: "24 hours" }).click()
              await page.getByText("Error rate (last 24 h)").waitFor()
              await page.getByText("p95 latency per 30 min (last 24 h)").waitFor()
              // per tool: calls, error rate, p95; list_owners failed (a 404 upstream)
              await waitText(page, "top-tools", "get_pet")
              const owners = page.getByTestId("top-tools").locator("tr").filter({ hasText: "list_owners" })
              assert.include(await owners.textContent(), "100.0 %")
              await waitText(page, "top-errors", "list_owners")
              await screenshot(page, "overview-ranges")
              // from a tool to its calls in the audit log, filtered
              await page.getByTestId("top-errors").getByRole("link", { name: "list_owners" }).click()
              await page.getByRole("heading", { level: 1, name: "Audit" }).waitFor()
              assert.strictEqual(await page.getByLabel("Tool", { exact: true }).inputValue(), "list_owners")
              const rows = page.locator("[data-testid=audit] tbody tr")
              await rows.first().waitFor()
              assert.include(await rows.first().textContent(), "pet-agent", "the caller by its token's name")
              // a call's details
              await rows.first().getByRole("button", { name: /^Details list_owners/ }).click()
              const detail = page.getByTestId("call-detail")
              await detail.waitFor()
              assert.strictEqual(
                await focused(page, "data-testid"),
                "call-detail"
              )
              for (
                const label of ["Upstream status", "Request id", "Duration", "Bytes in / out", "Redactions", "Error"]
              ) {
                await detail.getByText(label, { exact: true }).waitFor()
              }
              assert.include(await detail.textContent(), "404")
              await detail.getByRole("heading", { name: "Arguments (as stored)" }).waitFor()
              // export of the filtered rows
              const [csv] = await Promise.all([
                page.waitForEvent("download"),
                page.getByRole("button", { name: "Export CSV" }).click()
              ])
              assert.strictEqual(csv.suggestedFilename(), "janus-audit.csv")
              const text = await new Promise<string>((resolve, reject) => {
                void csv.createReadStream().then((stream) => {
                  let body = ""
                  stream.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")))
                  stream.on("end", () => resolve(body))
                  stream.on("error", reject)
                }, reject)
              })
              const lines = text.trim().split(/\r\n/)
              assert.match(lines[0]!, /^id,at,tool,outcome,identity,caller,/)
              assert.isAbove(lines.length, 1)
              for (const line of lines.slice(1)) assert.include(line, "list_owners")
              const [json] = await Promise.all([
                page.waitForEvent("download"),
                page.getByRole("button", { name: "Export JSON" }).click()
              ])
              assert.strictEqual(json.suggestedFilename(), "janus-audit.json")
              // an empty result says so
              await page.getByLabel("Tool", { exact: true }).fill("no_such_tool")
              await page.getByRole("button", { name: "Apply filters" }).click()
              await waitText(page, "audit-empty", "No calls match these filters")

              // Try with a token minted for the purpose (15 minutes); a tool error shows as an error
              await go(page, "Tools")
              await page.getByRole("button", { name: "Mint a 15-minute token" }).click()
              await waitText(page, "token-in-use", "Using studio-try-")
              await page.getByRole("button", { name: "Try list_owners" }).click()
              await page.getByRole("button", { name: "Call list_owners" }).click()
              // the endpoint's 404: a tool error, shown as an error (an alert), not as a plain result
              await page.getByTestId("try-outcome").getByRole("alert").first().waitFor()
              assert.strictEqual(
                await focused(page, "data-testid"),
                "try-outcome"
              )
              const minted = (await api(base, admin, "GET", "client-tokens?limit=100")).items.find((t: any) =>
                t.name.startsWith("studio-try-")
              )
              const lifetime = Date.parse(minted.expiresAt) - Date.parse(minted.createdAt)
              assert.isAtMost(lifetime, 15 * 60_000 + 5_000)
              assert.isAtLeast(lifetime, 15 * 60_000 - 5_000)
              assert.deepStrictEqual(errors, [])
            } finally {
              await close()
            }
          })
        }),
      90_000
    )
  })
}
