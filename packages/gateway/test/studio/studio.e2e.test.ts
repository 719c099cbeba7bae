/**
 * Studio end to end: a real gateway (GatewayTesting: loopback HTTP, in-memory
 * PGlite) and a real downstream REST API on loopback, driven through
 * Chromium. One browser for the file.
 *
 * What it shows: sign-in by keyboard; a connection and an endpoint created
 * and edited in the UI (an invalid edit showing the API's detail); a virtual
 * server edited over a stale version (409, then a deliberate save); the tool called from the UI's generated form; the call live in
 * the overview and the audit tail of other open pages (no polling); a
 * revoked token refused; an OpenAPI import with preview; an API-made change
 * appearing without reload; a forced resync refetching what is on screen;
 * a dropped stream showing "Reconnecting…" and resuming with Last-Event-ID;
 * admin changes made through the API by another admin appearing live on
 * the audit page (actor, action, resource, diff), once each after a resync.
 * Each page's screenshot goes to docs/screenshots with UPDATE_SCREENSHOTS=1 (see browser.ts).
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Frame, Hub } from "@janus/sse"
import { Effect } from "effect"
import type { Server } from "node:http"
import type { Browser } from "playwright-core"
import { afterAll, beforeAll } from "vitest"
import * as GatewayTesting from "../../src/testing.ts"
import { EVERYTHING } from "../federation/stdio-servers.ts"
import { axeViolations, browserAvailable, focused, go, launch, screenshot, signIn, watchErrors } from "./browser.ts"
import { api, baseUrl, byName, newAdminToken, startDownstream, WAIT, waitText } from "./support.ts"

const openApiDocument = (baseUrl: string) =>
  JSON.stringify({
    openapi: "3.0.3",
    info: { title: "Petstore", version: "1.0.0" },
    servers: [{ url: baseUrl }],
    paths: {
      "/pets": { get: { operationId: "listPets", summary: "List pets", responses: { "200": { description: "ok" } } } },
      "/pets/{petId}": {
        get: {
          operationId: "showPet",
          summary: "One pet",
          parameters: [{ name: "petId", in: "path", required: true, schema: { type: "string" } }],
          responses: { "200": { description: "ok" } }
        }
      }
    }
  })

const gateway = GatewayTesting.layer({
  config: { JANUS_ALLOW_ANONYMOUS: false, JANUS_STDIO_COMMANDS: [process.execPath] }
})

/**
 * Publishes throwaway events (topic `test.flood`, which nothing on screen
 * uses) in one synchronous burst until Studio's subscriber overflows its
 * 1,000-frame queue `times` times: ADR-0197 then empties the queue for one
 * resync (and, at the third overflow within 60 s, sends reconnect and ends
 * the stream). Nothing of the flood reaches the client: the queue holds only
 * the resync afterwards.
 */
const flood = (times: number) =>
  Effect.gen(function*() {
    const hub = yield* Hub.Hub
    const queued = () => Effect.runSync(hub.stats).reduce((max, s) => Math.max(max, s.queuedFrames), 0)
    const before = Effect.runSync(hub.subscribers)
    let overflows = 0
    let last = queued()
    for (let i = 0; i < 10_000 && overflows < times; i++) {
      hub.publishUnsafe(Frame.event({ id: 0, topic: "test.flood", data: null }))
      const now = queued()
      if (now < last || Effect.runSync(hub.subscribers) < before) overflows++
      last = now
    }
    assert.strictEqual(overflows, times, "the flood overflowed the subscriber's queue")
  })

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

const newPage = async () => {
  const context = await browser!.newContext({ viewport: { width: 1400, height: 900 } })
  const page = await context.newPage()
  page.setDefaultTimeout(WAIT)
  page.on("dialog", (dialog) => void dialog.accept())
  return { page, errors: watchErrors(page), close: () => context.close() }
}

const suite = available ? layer(gateway, { timeout: 120_000, excludeTestServices: true }) : undefined
if (suite === undefined) describe.skip("Studio end to end (no Chromium)", () => it("skipped", () => undefined))
else {
  suite("Studio end to end", (it) => {
    it.effect(
      "sign in, create a connection and an endpoint, call the tool from the UI, watch it live, revoke the token",
      () =>
        Effect.gen(function*() {
          const base = yield* baseUrl
          const token = yield* newAdminToken("studio e2e")
          const downstreamUrl = downstream!.url
          yield* Effect.promise(async () => {
            const main = await newPage()
            const overview = await newPage()
            const audit = await newPage()
            try {
              const page = main.page
              await page.goto(`${base}/`)
              await screenshot(page, "sign-in")
              await signIn(page, base, token)

              // a connection
              await go(page, "Connections")
              await page.getByRole("button", { name: "New connection" }).click()
              const form = page.getByRole("form", { name: "New connection" })
              await form.getByLabel("Name").fill("pets")
              await form.getByLabel("Base URL").fill(downstreamUrl)
              await form.getByLabel("Egress allow-list").fill("127.0.0.1")
              await form.getByRole("button", { name: "Create connection" }).click()
              await waitText(page, "connections", "pets")
              // edit it, then test it: one GET to the base URL through egress (the pet API answers 404 at /)
              await page.getByRole("button", { name: "Edit pets" }).click()
              const edit = page.getByRole("form", { name: "Edit pets" })
              await edit.getByLabel("Description").fill("The pet API")
              await edit.getByRole("button", { name: "Save" }).click()
              await edit.waitFor({ state: "detached" })
              await page.getByRole("button", { name: "Test pets" }).click()
              await waitText(page, "test-pets", "Reachable, but not a success: HTTP 404")
              assert.strictEqual(await page.getByTestId("test-pets").getAttribute("data-outcome"), "warn")

              // a stdio upstream (a published server from npm): a command JANUS_STDIO_COMMANDS does not allow is
              // refused with the variable named at the field; the allowed one runs, healthy with its pid
              await page.getByRole("button", { name: "New connection" }).click()
              const stdio = page.getByRole("form", { name: "New connection" })
              await stdio.getByLabel("Kind").selectOption("mcp")
              await stdio.getByLabel("Transport").selectOption("stdio")
              await stdio.getByLabel("Name").fill("everything")
              await stdio.getByLabel("Command").fill("sh")
              await stdio.getByRole("button", { name: "Create connection" }).click()
              await stdio.getByText("JANUS_STDIO_COMMANDS").first().waitFor()
              await stdio.getByLabel("Command").fill(process.execPath)
              await stdio.getByLabel("Arguments").fill(`${EVERYTHING}\nstdio`)
              await stdio.getByLabel("Environment").fill("MODE=studio")
              await stdio.getByRole("button", { name: "Create connection" }).click()
              await waitText(page, "connections", "mcp (stdio)")
              await waitText(page, "connections", "upstream healthy")
              await waitText(page, "connections", "pid ")
              await screenshot(page, "connections")

              // an endpoint
              await go(page, "Tools")
              await page.getByRole("button", { name: "New endpoint" }).click()
              const endpoint = page.getByRole("form", { name: "New endpoint" })
              await endpoint.getByLabel("Tool name").fill("get_pet")
              await endpoint.getByLabel("Path template").fill("/pets/{id}")
              await endpoint.getByLabel("Input schema (JSON Schema)").fill(JSON.stringify({
                type: "object",
                required: ["id"],
                properties: { id: { type: "string", description: "Pet id" } }
              }))
              await endpoint.getByLabel("Argument locations (JSON)").fill("{\"id\":\"path\"}")
              await endpoint.getByRole("button", { name: "Create endpoint" }).click()
              await waitText(page, "endpoints", "get_pet")
              // edit it: the form comes prefilled; an invalid path shows the API's detail, then a new description saves
              await page.getByRole("button", { name: "Edit get_pet" }).click()
              const editEndpoint = page.getByRole("form", { name: "Edit get_pet" })
              assert.strictEqual(await editEndpoint.getByLabel("Path template").inputValue(), "/pets/{id}")
              assert.strictEqual(
                await editEndpoint.getByLabel("Argument locations (JSON)").inputValue(),
                "{\"id\":\"path\"}"
              )
              await editEndpoint.getByLabel("Path template").fill("/pets/{petId}")
              await editEndpoint.getByRole("button", { name: "Save" }).click()
              await editEndpoint.getByRole("alert").filter({ hasText: "{petId}" }).waitFor()
              await editEndpoint.getByLabel("Path template").fill("/pets/{id}")
              await editEndpoint.getByLabel("Description").fill("One pet by id")
              await editEndpoint.getByRole("button", { name: "Save" }).click()
              await editEndpoint.waitFor({ state: "detached" })
              const edited = await byName(base, token, "endpoints", "get_pet")
              assert.strictEqual(edited.description, "One pet by id")
              assert.strictEqual(edited.pathTemplate, "/pets/{id}")
              assert.strictEqual(edited.version, 2, "one write: the refused one changed nothing")

              // a client token, shown once
              await go(page, "Tokens")
              const tokenForm = page.getByRole("form", { name: "New client token" })
              await tokenForm.getByLabel("Name").fill("studio-e2e")
              await tokenForm.getByRole("button", { name: "Create client token" }).click()
              const clientToken = (await page.getByTestId("new-token").textContent())!.trim()
              assert.match(clientToken, /^jns_/)
              await waitText(page, "client-tokens", "studio-e2e")
              await screenshot(page, "tokens")
              await page.getByRole("button", { name: "Done" }).click()
              assert.strictEqual(await page.getByTestId("new-token").count(), 0, "the token is shown once")

              // two more tabs, open before the call: the overview and the audit tail
              await signIn(overview.page, base, token)
              await signIn(audit.page, base, token, "/audit")
              await audit.page.getByRole("heading", { level: 1, name: "Audit" }).waitFor()
              const overviewRequests: Array<string> = []
              overview.page.on("request", (r) => overviewRequests.push(new URL(r.url()).pathname))
              const auditRequests: Array<string> = []
              audit.page.on("request", (r) => auditRequests.push(new URL(r.url()).pathname))

              // the tool, called through the form generated from its schema
              await go(page, "Tools")
              // the client token created in this tab is offered for Try (its value never typed again)
              await page.getByRole("form", { name: "Use a token created in this tab" }).getByLabel(
                "Created in this tab"
              )
                .selectOption({ label: "studio-e2e" })
              await page.getByRole("button", { name: "Use this token" }).click()
              await waitText(page, "token-in-use", "Using studio-e2e")
              await waitText(page, "tools", "get_pet")
              // tools/list through /mcp has the edited description
              await waitText(page, "tools", "One pet by id")
              await page.getByRole("button", { name: "Try get_pet" }).click()
              const tryForm = page.getByRole("form", { name: "Try get_pet" })
              await tryForm.getByLabel(/^id/).fill("42")
              await tryForm.getByRole("button", { name: "Call get_pet" }).click()
              await waitText(page, "tool-result", "Rex")
              assert.include(await page.getByTestId("tool-result").textContent(), "\"42\"")
              // the result is scrolled to and focused, so it is seen (and read) where it opened
              assert.strictEqual(
                await focused(page, "data-testid"),
                "try-outcome"
              )
              assert.isTrue(await page.getByTestId("tool-result").isVisible())
              await screenshot(page, "tools")

              // live: the call reaches the overview and the audit tail without a request
              await waitText(overview.page, "total", "1")
              await waitText(overview.page, "top-tools", "get_pet")
              await audit.page.locator("tr.live-row").filter({ hasText: "get_pet" }).waitFor()
              assert.notInclude(overviewRequests, "/api/v1/audit", "the overview did not poll the audit log")
              assert.notInclude(auditRequests, "/api/v1/audit", "the audit tail did not poll")
              await screenshot(overview.page, "overview")
              await screenshot(audit.page, "audit")
              // filter and page the stored records (keyset cursor) as well: the page shows every kind, so the
              // admin rows of the get_pet endpoint mention it too until the filtered page has loaded
              await audit.page.getByLabel("Kind", { exact: true }).selectOption("call")
              await audit.page.getByLabel("Tool", { exact: true }).fill("get_pet")
              await audit.page.getByLabel("Outcome", { exact: true }).selectOption("ok")
              await audit.page.getByRole("button", { name: "Apply filters" }).click()
              await audit.page.waitForFunction(
                `(() => { const rows = [...document.querySelectorAll("[data-testid=audit] tbody tr:not(.live-row)")]; ` +
                  `return rows.length === 1 && rows[0].textContent.includes("get_pet") })()`
              )
              assert.isTrue(await audit.page.getByRole("button", { name: "Older" }).isDisabled(), "one page only")

              // revoke the token in another tab; the next call is refused
              await go(overview.page, "Tokens")
              await overview.page.getByRole("button", { name: "Revoke studio-e2e" }).click()
              await waitText(overview.page, "client-tokens", "revoked")
              await tryForm.getByRole("button", { name: "Call get_pet" }).click()
              await page.getByRole("alert").filter({ hasText: "401" }).waitFor()

              for (const p of [main, overview, audit]) assert.deepStrictEqual(p.errors, [])
            } finally {
              await Promise.all([main.close(), overview.close(), audit.close()])
            }
          })
        }),
      90_000
    )

    it.effect("imports an OpenAPI document: upload, preview with diff, apply", () =>
      Effect.gen(function*() {
        const base = yield* baseUrl
        const token = yield* newAdminToken("studio e2e")
        yield* Effect.promise(async () => {
          const { page, errors, close } = await newPage()
          try {
            await signIn(page, base, token, "/import")
            await page.getByRole("heading", { level: 1, name: "OpenAPI import" }).waitFor()
            await page.getByLabel("Connection name").fill("petstore")
            await page.getByLabel("Egress allow-list").fill("127.0.0.1")
            await page.getByLabel("Upload a document (JSON or YAML)").setInputFiles({
              name: "petstore.json",
              mimeType: "application/json",
              buffer: Buffer.from(openApiDocument(downstream!.url))
            })
            await page.getByRole("button", { name: "Preview" }).click()
            await waitText(page, "import-preview", "+ listPets")
            await waitText(page, "import-preview", "+ showPet")
            assert.include(await page.getByTestId("import-preview").textContent(), "(new)")
            await screenshot(page, "import")
            await page.getByRole("button", { name: "Apply import" }).click()
            await page.getByRole("status").filter({ hasText: "Imported 2 new" }).waitFor()
            await go(page, "Tools")
            await waitText(page, "endpoints", "showPet")
            assert.deepStrictEqual(errors, [])
          } finally {
            await close()
          }
        })
      }), 60_000)

    it.effect(
      "configuration as code: export, paste and preview the diff, apply it (a token shown once), refusals",
      () =>
        Effect.gen(function*() {
          const base = yield* baseUrl
          const token = yield* newAdminToken("studio e2e")
          yield* Effect.promise(async () => {
            const { page, errors, close } = await newPage()
            try {
              await signIn(page, base, token, "/configuration")
              await page.getByRole("heading", { level: 1, name: "Configuration" }).waitFor()

              // the export button downloads the document
              const [download] = await Promise.all([
                page.waitForEvent("download"),
                page.getByRole("button", { name: "Export YAML" }).click()
              ])
              assert.strictEqual(download.suggestedFilename(), "janus.yaml")
              const exported = await new Promise<string>((resolve, reject) => {
                void download.createReadStream().then((stream) => {
                  let text = ""
                  stream.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")))
                  stream.on("end", () => resolve(text))
                  stream.on("error", reject)
                }, reject)
              })
              assert.match(exported, /^apiVersion: janus\/v1\nkind: Configuration\n/)

              // paste a document: the preview is the plan as a diff; nothing is written yet (what it does not name
              // is listed as kept)
              await api(base, token, "POST", "connections", {
                body: { kind: "rest", name: "kept-by-config", baseUrl: "https://kept.example.com" },
                status: 201
              })
              const document = [
                "apiVersion: janus/v1",
                "kind: Configuration",
                "connections:",
                "  - { name: config-e2e, kind: rest, baseUrl: " + downstream!.url + ", egressAllowList: [127.0.0.1] }",
                "endpoints:",
                "  - name: config_e2e_pets",
                "    connection: config-e2e",
                "    method: GET",
                "    pathTemplate: /pets",
                "    inputSchema: { type: object }",
                "clientTokens:",
                "  - { name: config-e2e-agent, allowedTools: [config_e2e_pets] }"
              ].join("\n")
              await page.getByLabel("Document (YAML or JSON)").fill(document)
              await page.getByRole("button", { name: "Preview" }).click()
              await waitText(page, "configuration-preview", "+ connection config-e2e")
              const preview = (await page.getByTestId("configuration-preview").textContent())!
              assert.include(preview, "+ endpoint config_e2e_pets")
              assert.include(preview, "+ client token config-e2e-agent")
              assert.notInclude(preview, "+ connection petstore", "what exists is not added")
              assert.include(preview, "− connection kept-by-config (not in the document; kept without prune)")
              const listed = await api(base, token, "GET", "connections?limit=100")
              assert.isFalse(listed.items.some((c: any) => c.name === "config-e2e"), "a preview writes nothing")
              await screenshot(page, "configuration")

              // apply that plan: the new token's value shown once; the connection appears in the Connections page
              await page.getByRole("button", { name: "Apply this plan" }).click()
              await page.getByRole("status").filter({ hasText: "Applied: 3 added" }).waitFor()
              assert.match((await page.getByTestId("issued-tokens").textContent())!, /config-e2e-agent: jns_[\w-]{43}/)
              await go(page, "Connections")
              await waitText(page, "connections", "config-e2e")

              // a document that does not validate: every problem with its path, nothing written
              await go(page, "Configuration")
              await page.getByLabel("Document (YAML or JSON)").fill(
                document.replace(`baseUrl: ${downstream!.url}`, "baseUrl: ftp://files.example").replace(
                  "connection: config-e2e",
                  "connection: nope"
                )
              )
              await page.getByRole("button", { name: "Preview" }).click()
              const problems = page.getByTestId("configuration-problems")
              await problems.waitFor()
              assert.include(
                await problems.textContent(),
                "endpoints[0].connection: refers to unknown connection \"nope\""
              )
              await page.getByLabel("Document (YAML or JSON)").fill(
                document.replace(`baseUrl: ${downstream!.url}`, "baseUrl: ftp://files.example")
              )
              await page.getByRole("button", { name: "Preview" }).click()
              await waitText(page, "configuration-problems", "connections[0].baseUrl: got \"ftp://files.example\"")
              const after = await byName(base, token, "connections", "config-e2e")
              assert.strictEqual(after.baseUrl, downstream!.url)
              assert.deepStrictEqual(errors, [])
            } finally {
              await close()
            }
          })
        }),
      60_000
    )

    it.effect(
      "an API-made change appears without reload; a forced resync refetches; a dropped stream resumes",
      () =>
        Effect.gen(function*() {
          const base = yield* baseUrl
          const token = yield* newAdminToken("studio e2e")
          const { page, errors, close } = yield* Effect.promise(newPage)
          yield* Effect.ensuring(
            Effect.gen(function*() {
              yield* Effect.promise(async () => {
                await signIn(page, base, token, "/connections")
                await page.getByRole("heading", { level: 1, name: "Connections" }).waitFor()
              })
              let loads = 0
              page.on("load", () => loads++)
              const requests: Array<string> = []
              page.on("request", (r) => requests.push(new URL(r.url()).pathname))

              // a change through the API, not the UI: the open page shows it (a signal, then a refetch)
              const created = yield* Effect.promise(() =>
                fetch(`${base}/api/v1/connections`, {
                  method: "POST",
                  headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
                  body: JSON.stringify({ kind: "rest", name: "made-by-api", baseUrl: "https://api.example.com" })
                })
              )
              assert.strictEqual(created.status, 201)
              yield* Effect.promise(() => waitText(page, "connections", "made-by-api"))
              assert.strictEqual(loads, 0, "no reload")

              // a forced resync (the subscriber's queue overflows): everything on screen is refetched
              requests.length = 0
              yield* flood(1)
              yield* Effect.promise(() =>
                page.waitForRequest((r) => new URL(r.url()).pathname === "/api/v1/connections", { timeout: WAIT })
              )
              yield* Effect.promise(() => page.waitForRequest((r) => new URL(r.url()).pathname === "/metrics"))
              assert.notInclude(requests, "/api/v1/events", "a resync is not a reconnect")

              // three overflows within 60 s: the server drops the stream; the UI says so and resumes with Last-Event-ID
              const lastEventIds: Array<string | undefined> = []
              let refuse = true
              yield* Effect.promise(() =>
                page.route("**/api/v1/events", async (route) => {
                  lastEventIds.push(route.request().headers()["last-event-id"])
                  if (refuse) await route.abort("connectionreset")
                  else await route.continue()
                })
              )
              yield* flood(3)
              yield* Effect.promise(() => waitText(page, "live-status", "Reconnecting…"))
              yield* Effect.promise(() => screenshot(page, "reconnecting"))
              refuse = false
              yield* Effect.promise(() => waitText(page, "live-status", "Live"))
              assert.isAbove(lastEventIds.length, 1)
              for (const id of lastEventIds) assert.match(id ?? "", /^\d+$/, "every reconnect sends Last-Event-ID")
              assert.strictEqual(loads, 0, "no reload")
              assert.deepStrictEqual(errors, [])
            }),
            Effect.promise(close)
          )
        }),
      60_000
    )

    it.effect(
      "admin changes appear live on the audit page (admin and every kind): actor, action, resource, diff; a resync refetches",
      () =>
        Effect.gen(function*() {
          const base = yield* baseUrl
          const watcher = yield* newAdminToken("audit watcher")
          // the actor of the changes: another admin token, named in the rows
          const actor = yield* newAdminToken("ops-carol")
          const admin = yield* Effect.promise(newPage)
          const every = yield* Effect.promise(newPage)
          yield* Effect.ensuring(
            Effect.promise(async () => {
              await signIn(admin.page, base, watcher, "/audit?kind=admin")
              await admin.page.getByRole("heading", { level: 1, name: "Audit" }).waitFor()
              assert.strictEqual(await admin.page.getByLabel("Kind", { exact: true }).inputValue(), "admin")
              await signIn(every.page, base, watcher, "/audit")
              await every.page.getByRole("heading", { level: 1, name: "Audit" }).waitFor()
              // the first page of each is loaded (rows or the empty state) before the change is made
              for (const p of [admin.page, every.page]) {
                await p.locator("[data-testid=audit], [data-testid=audit-empty]").first().waitFor()
              }
              let loads = 0
              const auditRequests: Array<string> = []
              for (const p of [admin.page, every.page]) {
                p.on("load", () => loads++)
                p.on("request", (r) => {
                  if (new URL(r.url()).pathname === "/api/v1/audit") auditRequests.push(r.url())
                })
              }

              // a change through the API, made by another admin: both open pages show it, no reload, no polling
              const made = await api(base, actor, "POST", "connections", {
                body: { kind: "rest", name: "audited-live", baseUrl: "https://audited.example.com" },
                status: 201
              })
              await api(base, actor, "PATCH", `connections/${made.id}`, {
                body: { description: "Watched live" },
                ifMatch: made.version
              })
              for (const p of [admin.page, every.page]) {
                const created = p.locator("tr.live-row").filter({ hasText: "create connection audited-live" })
                await created.waitFor()
                assert.include(await created.textContent(), "ops-carol via api")
                assert.include(await created.textContent(), "name: \"audited-live\"")
                const updated = p.locator("tr.live-row").filter({ hasText: "update connection audited-live" })
                await updated.waitFor()
                assert.include(await updated.getByRole("list").textContent(), "description: \"\" → \"Watched live\"")
                // newest first
                assert.match(
                  (await p.locator("[data-testid=audit] tbody").textContent())!,
                  /update connection audited-live[\s\S]*create connection audited-live/
                )
              }
              assert.deepStrictEqual(auditRequests, [], "the live rows came without a request")
              assert.strictEqual(loads, 0, "no reload")

              // the change's details, and no serious accessibility violation with the live rows on screen
              await admin.page.getByRole("button", { name: /^Details update connection audited-live/ }).click()
              const detail = admin.page.getByTestId("change-detail")
              await detail.filter({ hasText: "Fields changed" }).waitFor()
              assert.include(await detail.textContent(), "1 → 2")
              assert.deepStrictEqual(await axeViolations(admin.page), [], "audit page with live admin changes")
              await screenshot(admin.page, "audit-admin-live")
              await admin.page.getByRole("button", { name: "Close" }).click()
              assert.deepStrictEqual([...admin.errors, ...every.errors], [])
            }),
            Effect.promise(every.close)
          )
          // a forced resync (events may have been lost): the page is refetched, and each change is shown once
          yield* Effect.ensuring(
            Effect.gen(function*() {
              yield* flood(1)
              yield* Effect.promise(() =>
                admin.page.waitForRequest((r) => new URL(r.url()).pathname === "/api/v1/audit", { timeout: WAIT })
              )
              yield* Effect.promise(async () => {
                const stored = admin.page.locator("[data-testid=audit] tbody tr:not(.live-row)")
                await stored.filter({ hasText: "update connection audited-live" }).waitFor()
                const rows = admin.page.locator("[data-testid=audit] tbody tr")
                assert.strictEqual(await rows.filter({ hasText: "create connection audited-live" }).count(), 1)
                assert.strictEqual(await rows.filter({ hasText: "update connection audited-live" }).count(), 1)
                assert.deepStrictEqual(admin.errors, [])
              })
            }),
            Effect.promise(admin.close)
          )
        }),
      60_000
    )

    it.effect("virtual servers and settings pages, by keyboard", () =>
      Effect.gen(function*() {
        const base = yield* baseUrl
        const token = yield* newAdminToken("studio e2e")
        yield* Effect.promise(async () => {
          const { page, errors, close } = await newPage()
          try {
            await signIn(page, base, token, "/virtual-servers")
            const form = page.getByRole("form", { name: "New virtual server" })
            await form.getByLabel("Name").focus()
            await page.keyboard.type("pets-only")
            await page.keyboard.press("Tab")
            await page.keyboard.type("Only the pet tools")
            // the tools are a picker of what exists: Space checks get_pet, Enter on the button creates
            await form.getByRole("checkbox", { name: "get_pet" }).focus()
            await page.keyboard.press("Space")
            await form.getByRole("button", { name: "Create virtual server" }).focus()
            await page.keyboard.press("Enter")
            await waitText(page, "virtual-servers", `${base}/servers/pets-only/mcp`)
            await screenshot(page, "virtual-servers")

            // edit it while someone else changes it through the API: the save over the version read is a 409
            // whose detail shows; saving again (now over the version re-read) is a deliberate overwrite
            await page.getByRole("button", { name: "Edit pets-only" }).click()
            const edit = page.getByRole("form", { name: "Edit pets-only" })
            assert.isTrue(await edit.getByRole("checkbox", { name: "get_pet" }).isChecked())
            // the edit form is scrolled to and focus moves into it
            assert.strictEqual(
              await focused(page, "aria-label", "form"),
              "Edit pets-only"
            )
            await edit.getByLabel("Description").fill("Pet tools")
            await edit.getByRole("checkbox", { name: "showPet" }).check()
            const read = await byName(base, token, "virtual-servers", "pets-only")
            await api(base, token, "PATCH", `virtual-servers/${read.id}`, {
              body: { description: "changed elsewhere" },
              ifMatch: read.version
            })
            await edit.getByRole("button", { name: "Save" }).click()
            await edit.getByRole("alert").filter({ hasText: "was changed by someone else" }).waitFor()
            assert.strictEqual(
              (await byName(base, token, "virtual-servers", "pets-only")).description,
              "changed elsewhere"
            )
            await edit.getByRole("button", { name: "Save" }).click()
            await edit.waitFor({ state: "detached" })
            await waitText(page, "virtual-servers", "get_pet, showPet")
            const saved = await byName(base, token, "virtual-servers", "pets-only")
            assert.strictEqual(saved.description, "Pet tools")
            assert.deepStrictEqual(saved.tools, ["get_pet", "showPet"])
            assert.strictEqual(saved.version, read.version + 2)
            await page.getByRole("form", { name: "New virtual server" }).waitFor()
            await go(page, "Settings")
            await waitText(page, "config", "JANUS_HOST")
            const text = (await page.getByTestId("config").textContent())!
            assert.notInclude(text, "jna_")
            // each variable with its source and meaning; nothing reads a bare null
            assert.notMatch(text, /\bnull\b/)
            const burst = page.getByTestId("config").locator("tr").filter({ hasText: "RATE_LIMIT_IP_BURST" })
            assert.include(await burst.textContent(), "Per-IP burst")
            assert.include(await burst.textContent(), "default")
            const stdio = page.getByTestId("config").locator("tr").filter({ hasText: "JANUS_STDIO_COMMANDS" })
            assert.include(await stdio.textContent(), "environment")
            await screenshot(page, "settings")
            assert.deepStrictEqual(errors, [])
          } finally {
            await close()
          }
        })
      }), 60_000)
  })
}
