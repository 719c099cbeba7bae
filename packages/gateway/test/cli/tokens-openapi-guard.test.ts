/**
 * `janus token|openapi|key rotate` (env-key mode) on an embedded database,
 * and the embedded-mode guard against a running server.
 */
import { assert, describe, it } from "@effect/vitest"
import { randomBytes } from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { CLI_SEQUENCE_TIMEOUT, fakeServer, FIXTURES, freePort, janus, type Ran, tempHome } from "./run.ts"

describe.concurrent("janus token, openapi import and key rotate", () => {
  it("token create/list/revoke, openapi import, key rotate with JANUS_MASTER_KEY", async () => {
    const home = tempHome()
    const env = { JANUS_HOME: home, JANUS_PORT: String(await freePort()) }
    const later: Array<Ran> = []

    // --servers must name existing virtual servers
    let r = await janus(["token", "create", "ci bot", "--servers", "public"], env)
    later.push(r)
    assert.strictEqual(r.code, 1)
    assert.match(r.stderr, /Error: .*unknown virtual_server "public".*\n {2}Fix: create what is referenced first/)
    assert.notMatch(r.stdout + r.stderr, /jns_/)

    const created = await janus([
      "token",
      "create",
      "ci bot",
      "--tools",
      "get_user,search",
      "--expires",
      "30d",
      "--json"
    ], env)
    assert.strictEqual(created.code, 0, created.stderr)
    const token = JSON.parse(created.stdout) as {
      token: string
      id: string
      allowedTools: Array<string>
      expiresAt: string
    }
    assert.match(token.token, /^jns_/)
    assert.deepStrictEqual(token.allowedTools, ["get_user", "search"])
    assert.isTrue(new Date(token.expiresAt).getTime() > Date.now() + 29 * 86_400_000)

    r = await janus(["token", "list"], env)
    later.push(r)
    assert.strictEqual(r.code, 0, r.stderr)
    assert.match(r.stdout, new RegExp(`${token.id} +jns_\\S+ +active +ci bot +tools=get_user,search +expires=`))

    r = await janus(["token", "revoke", "ci bot"], env)
    later.push(r)
    assert.strictEqual(r.code, 0, r.stderr)
    assert.match(r.stdout, /Revoked client token ci bot/)

    r = await janus(["token", "revoke", "no-such-token"], env)
    later.push(r)
    assert.strictEqual(r.code, 1)
    assert.match(r.stderr, /Error: no client token has the id or name "no-such-token"\n {2}Fix: see `janus token list`/)

    for (const o of later) assert.notInclude(o.stdout + o.stderr, token.token)

    // openapi import: dry run writes nothing; then the import; progress on stderr
    const petstore = Path.join(FIXTURES, "petstore.yaml")
    r = await janus(["openapi", "import", petstore, "--connection", "pets", "--dry-run"], env)
    assert.strictEqual(r.code, 0, r.stderr)
    assert.match(r.stderr, /planned 3 operations \(0 skipped\): 3 to add/)
    assert.notInclude(r.stderr, "writing…")
    assert.match(r.stdout, /Would import 3 endpoints into pets/)
    r = await janus(["openapi", "import", petstore, "--connection", "pets", "--prefix", "pet_", "--json"], env)
    assert.strictEqual(r.code, 0, r.stderr)
    assert.match(r.stderr, /reading .*petstore\.yaml…\nplanned 3 operations.*\nwriting…/)
    const imported = JSON.parse(r.stdout) as { dryRun: boolean; added: Array<string> }
    assert.isFalse(imported.dryRun)
    assert.deepStrictEqual(imported.added.sort(), ["pet_createPets", "pet_listPets", "pet_showPetById"])
    // a document that is not OpenAPI
    const bad = Path.join(home, "bad.yaml")
    Fs.writeFileSync(bad, "hello: world\n")
    r = await janus(["openapi", "import", bad, "--connection", "x"], env)
    assert.strictEqual(r.code, 1)
    assert.match(r.stderr, /Error: .*\n {2}Fix: correct the document/)
    // a URL is fetched through the egress guard: loopback is refused
    r = await janus(["openapi", "import", "http://127.0.0.1:9/openapi.json", "--connection", "y"], env)
    assert.strictEqual(r.code, 1)
    assert.match(
      r.stderr,
      /Error: the document could not be fetched from http:\/\/127\.0\.0\.1:9: .*refused.*\n {2}Fix: .*import the file instead/i
    )

    // key rotate with JANUS_MASTER_KEY (on the same database): the new key printed once, with the variables to set
    const oldKey = randomBytes(32).toString("base64")
    const envKey = { ...env, JANUS_MASTER_KEY: oldKey }
    r = await janus(["secret", "set", "api_key"], envKey, "value-1")
    assert.strictEqual(r.code, 0, r.stderr)

    r = await janus(["key", "rotate"], envKey)
    assert.strictEqual(r.code, 0, r.stderr)
    const newKey = /JANUS_MASTER_KEY=(\S+)/.exec(r.stdout)?.[1]
    assert.isDefined(newKey)
    assert.strictEqual(Buffer.from(newKey!, "base64").length, 32)
    assert.match(r.stdout, /JANUS_MASTER_KEY_PREVIOUS=<the value JANUS_MASTER_KEY has now>/)
    assert.match(r.stdout, /shown once/)
    assert.notInclude(r.stdout + r.stderr, oldKey)

    // the old key alone no longer opens the secrets: doctor says so and fails
    r = await janus(["doctor"], envKey)
    assert.strictEqual(r.code, 1, r.stdout)
    assert.match(r.stdout, /FAIL {2}secrets: 1 secret\(s\) sealed under a key .*JANUS_MASTER_KEY_PREVIOUS/)
    assert.match(r.stderr, /Error: 1 doctor check\(s\) failed/)
    // as instructed: new key current, old key previous
    r = await janus(["doctor"], { ...envKey, JANUS_MASTER_KEY: newKey!, JANUS_MASTER_KEY_PREVIOUS: oldKey })
    assert.strictEqual(r.code, 0, r.stdout + r.stderr)
    assert.match(r.stdout, /ok {4}master key: JANUS_MASTER_KEY valid .*1 previous key/)
    assert.notInclude(r.stdout + r.stderr, newKey!)
  }, CLI_SEQUENCE_TIMEOUT)

  it("refuses to open the embedded database while a server answers on JANUS_PORT", async () => {
    const server = await fakeServer()
    try {
      const env = { JANUS_HOME: tempHome(), JANUS_PORT: String(server.port) }
      for (
        const args of [
          ["migrate"],
          ["connection", "add", "x", "--base-url", "https://x.example.com"]
        ]
      ) {
        const r = await janus(args, env)
        assert.strictEqual(r.code, 1, `${args.join(" ")}: ${r.stdout}`)
        assert.match(
          r.stderr,
          new RegExp(`Error: a Janus server answers at http://127\\.0\\.0\\.1:${server.port}/healthz`)
        )
        assert.match(r.stderr, /single-process/)
        assert.match(r.stderr, /Fix: stop the server .* admin API \(\/api\/v1/)
      }
      // doctor only reads: it asks the running server instead
      const r = await janus(["doctor"], env)
      assert.match(r.stdout, /ok {4}database: embedded database in use by the server at .*readyz answered 200/)
      assert.match(r.stdout, /skip {2}egress/)
    } finally {
      await server.close()
    }
  }, 60_000)
})
