/**
 * Export and apply, end to end on in-memory PGlite: a populated instance's
 * export applied to an empty one exports identically (YAML and JSON); a
 * second apply changes nothing; a changed document gives exactly the
 * expected plan; a plain apply keeps what the document no longer names and
 * `prune` removes it; an apply planned from an older basis changes nothing.
 */
import { assert, describe, it } from "@effect/vitest"
import { ClientTokens, Connections, Endpoints, Secrets } from "@janus/storage"
import { Effect, Option, Redacted } from "effect"
import * as Yaml from "yaml"
import type { Change } from "../../src/configuration/Plan.ts"
import * as Text from "../../src/configuration/Text.ts"
import { applyText, applyValue, instance, populate, POPULATED, setSecrets } from "./support.ts"

const brief = (changes: ReadonlyArray<Change>) =>
  changes.map((c) => `${c.action} ${c.section} ${c.name}${c.fields.length > 0 ? ` (${c.fields.join(", ")})` : ""}`)

describe("configuration export and apply", () => {
  it.live(
    "an export applied to an empty instance exports identically; applying it again changes nothing",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const a = yield* instance()
        yield* a.run(populate)
        const yaml = yield* a.exportText("yaml")
        const json = yield* a.exportText("json")
        assert.match(yaml, /^apiVersion: janus\/v1\nkind: Configuration\n/)
        // defaults are left out, values and ids are never written
        assert.notInclude(yaml, "a-gh-token")
        assert.notMatch(yaml, /[0-9a-f]{8}-[0-9a-f]{4}-/)
        assert.notInclude(yaml, "timeoutMs: 30000")
        assert.deepStrictEqual(Yaml.parse(yaml), JSON.parse(json))

        for (const [format, text] of [["yaml", yaml], ["json", json]] as const) {
          const b = yield* instance()
          // secret values belong to each environment: set before the apply, as `janus secret set` would
          yield* b.run(setSecrets("b"))
          const first = yield* b.run(applyText(text))
          assert.isTrue(first.applied)
          assert.deepStrictEqual(
            brief(first.plan.changes),
            [
              "add connections docs",
              "add connections github",
              "add connections internal",
              "add connections legacy",
              "add connections memory",
              "add endpoints create_issue",
              "add endpoints get_repo",
              "add endpoints health",
              "add virtualServers dev",
              "add virtualServers ops",
              "add clientTokens ci",
              "add clientTokens expired",
              "add clientTokens old",
              "add clientTokens studio"
            ],
            format
          )
          assert.strictEqual(first.plan.unchanged, 3, "the three secrets were there")
          // values issued for the active tokens only, and each works
          assert.deepStrictEqual(first.issuedTokens.map((t) => t.name).sort(), ["ci", "studio"])
          for (const issued of first.issuedTokens) {
            const verified = yield* b.run(ClientTokens.use((t) => t.verify(issued.token)))
            assert.strictEqual(Option.getOrThrow(verified).name, issued.name)
          }
          assert.strictEqual(yield* b.exportText(format), text, `${format}: the export is the same text`)

          const basis = (yield* b.applier.export).basis
          const second = yield* b.run(applyText(text))
          assert.deepStrictEqual(second.plan.changes, [])
          assert.strictEqual(second.plan.unchanged, POPULATED)
          assert.deepStrictEqual(second.issuedTokens, [])
          assert.strictEqual((yield* b.applier.export).basis, basis, "nothing was written: every version is the same")
          assert.strictEqual(second.basis, basis)
          // and the secrets kept B's values
          const value = yield* b.run(Secrets.use((s) => s.reveal("gh-token")))
          assert.strictEqual(Redacted.value(value), "b-gh-token")
        }
      })),
    120_000
  )

  it.live(
    "a changed document gives exactly the expected plan; a plain apply keeps removals, prune removes",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const a = yield* instance()
        yield* a.run(populate)
        const doc = Yaml.parse(yield* a.exportText()) as Record<string, Array<Record<string, unknown>>>
        const github = doc.connections!.find((c) => c.name === "github")!
        github.baseUrl = "https://github.example.com/api/v3"
        github.description = "GitHub Enterprise"
        doc.endpoints = doc.endpoints!.filter((e) => e.name !== "health")
        doc.virtualServers!.push({ name: "docs-only", tools: ["docs/*"] })
        doc.virtualServers = doc.virtualServers!.filter((s) => s.name !== "ops")
        doc.clientTokens!.find((t) => t.name === "ci")!.allowedTools = ["get_repo"]
        doc.secrets = doc.secrets!.filter((s) => s.name !== "unused")

        const before = yield* a.applier.export
        const dry = yield* a.run(applyValue(doc, { dryRun: true }))
        assert.isFalse(dry.applied)
        const expected = [
          "change connections github (baseUrl, description)",
          "add virtualServers docs-only",
          "change clientTokens ci (allowedTools)",
          "remove secrets unused",
          "remove endpoints health",
          "remove virtualServers ops"
        ]
        assert.deepStrictEqual(brief(dry.plan.changes), [
          "remove secrets unused",
          "change connections github (baseUrl, description)",
          "remove endpoints health",
          "add virtualServers docs-only",
          "remove virtualServers ops",
          "change clientTokens ci (allowedTools)"
        ])
        assert.sameMembers(brief(dry.plan.changes), expected)
        assert.strictEqual(dry.plan.unchanged, POPULATED - 5)
        assert.deepStrictEqual((yield* a.applier.export).document, before.document, "a dry run writes nothing")
        assert.strictEqual((yield* a.applier.export).basis, before.basis)
        assert.deepStrictEqual(
          Text.plan(dry.plan),
          [
            "Plan: 1 to add, 2 to change, 3 to remove (kept without --prune), 12 unchanged",
            "  - secret unused (not in the document; kept: apply with --prune to remove)",
            "  ~ connection github (baseUrl, description)",
            "  - endpoint health (not in the document; kept: apply with --prune to remove)",
            "  + virtual server docs-only",
            "  - virtual server ops (not in the document; kept: apply with --prune to remove)",
            "  ~ client token ci (allowedTools)"
          ]
        )

        // a plain apply: the changes, and the removals only listed
        const plain = yield* a.run(applyValue(doc))
        assert.deepStrictEqual(brief(plain.plan.changes), brief(dry.plan.changes))
        assert.isFalse(plain.plan.prune)
        const connection = Option.getOrThrow(yield* a.run(Connections.use((c) => c.findByName("github"))))
        assert.strictEqual(connection.kind === "rest" && connection.baseUrl, "https://github.example.com/api/v3")
        assert.strictEqual(connection.version, 2)
        assert.isTrue(Option.isSome(yield* a.run(Endpoints.use((e) => e.findByName("health")))), "kept")
        const again = yield* a.run(applyValue(doc))
        assert.deepStrictEqual(brief(again.plan.changes), [
          "remove secrets unused",
          "remove endpoints health",
          "remove virtualServers ops"
        ])

        // prune: removed; what is stored is now exactly the document
        const pruned = yield* a.run(applyValue(doc, { prune: true }))
        assert.deepStrictEqual(brief(pruned.plan.changes), brief(again.plan.changes))
        assert.isTrue(Option.isNone(yield* a.run(Endpoints.use((e) => e.findByName("health")))))
        assert.isFalse((yield* a.run(Secrets.use((s) => s.list))).some((s) => s.name === "unused"))
        const final = Yaml.parse(yield* a.exportText())
        assert.deepStrictEqual(final, doc)
        assert.deepStrictEqual((yield* a.run(applyValue(doc, { prune: true }))).plan.changes, [])
      })),
    120_000
  )

  it.live("an apply planned from an older basis fails and changes nothing", () =>
    Effect.scoped(Effect.gen(function*() {
      const a = yield* instance()
      yield* a.run(populate)
      const doc = Yaml.parse(yield* a.exportText()) as Record<string, Array<Record<string, unknown>>>
      doc.connections!.find((c) => c.name === "legacy")!.description = "the old server"
      const dry = yield* a.run(applyValue(doc, { dryRun: true }))
      assert.deepStrictEqual(brief(dry.plan.changes), ["change connections legacy (description)"])

      // someone changes a connection meanwhile (through the admin API, say)
      const internal = Option.getOrThrow(yield* a.run(Connections.use((c) => c.findByName("internal"))))
      if (internal.kind !== "rest") return assert.fail("internal is a rest connection")
      yield* a.run(Connections.use((c) =>
        c.update(internal.id, internal.version, {
          kind: "rest",
          name: "internal",
          baseUrl: "http://10.0.0.6:8080",
          auth: internal.auth,
          egressAllowList: ["10.0.0.0/8"]
        })
      ))
      const changed = yield* a.applier.export
      const error = yield* Effect.flip(a.run(applyValue(doc, { basis: dry.basis })))
      assert.strictEqual(error._tag, "ConfigurationChanged")
      assert.match(error.message, /changed by someone else since the plan was made .*nothing was applied/)
      assert.deepStrictEqual((yield* a.applier.export).document, changed.document, "nothing was applied")
      // planned again, it applies
      const replanned = yield* a.run(applyValue(doc, { dryRun: true }))
      const applied = yield* a.run(applyValue(doc, { basis: replanned.basis }))
      assert.deepStrictEqual(brief(applied.plan.changes), [
        "change connections internal (baseUrl, timeoutMs, breaker)",
        "change connections legacy (description)"
      ])
    })), 120_000)
})
