/**
 * `janus apply` and `janus export` as processes on an embedded database:
 * the plan printed as a diff, `--dry-run`, a token value printed once,
 * applying twice, a directory of files, `--prune`, stdin, JSON output and
 * `--detailed-exit-code`, `valueFrom.env` from the command's environment,
 * and an invalid document refused with its paths (nothing written).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Fs from "node:fs"
import * as Path from "node:path"
import * as Yaml from "yaml"
import { CLI_SEQUENCE_TIMEOUT, freePort, janus, tempHome } from "./run.ts"

const TOKEN = `jns_${"d".repeat(43)}`
const SECRET = "value-from-the-environment-4711"

const base = `apiVersion: janus/v1
kind: Configuration
secrets:
  - name: gh-token
    valueFrom: { env: GH_TOKEN }
connections:
  - name: github
    kind: rest
    baseUrl: https://api.github.com
    auth: { scheme: bearer, secret: gh-token }
endpoints:
  - name: get_repo
    connection: github
    method: GET
    pathTemplate: /repos/{owner}/{repo}
    arguments: { owner: path, repo: path }
    inputSchema:
      type: object
      properties: { owner: { type: string }, repo: { type: string } }
  - name: rate_limit
    connection: github
    method: GET
    pathTemplate: /rate_limit
    inputSchema: { type: object }
`
const tokens = `apiVersion: janus/v1
kind: Configuration
virtualServers:
  - name: dev
    tools: [get_repo]
clientTokens:
  - name: laptop
    allowedVirtualServers: [dev]
  - name: deploy
    allowedTools: [get_repo]
    valueFrom: { env: DEPLOY_TOKEN }
`

describe.concurrent("janus apply and export", () => {
  it("plan, dry run, apply, apply again, a directory, prune, stdin, JSON, exit codes", async () => {
    const home = tempHome()
    const env = { JANUS_HOME: home, JANUS_PORT: String(await freePort()), GH_TOKEN: SECRET, DEPLOY_TOKEN: TOKEN }
    const dir = Path.join(home, "config")
    Fs.mkdirSync(dir)
    Fs.writeFileSync(Path.join(dir, "10-base.yaml"), base)
    Fs.writeFileSync(Path.join(dir, "20-tokens.yml"), tokens)
    Fs.writeFileSync(Path.join(dir, "README.md"), "not a document")
    Fs.mkdirSync(Path.join(dir, "..data"))

    // dry run: the plan as a diff, nothing written
    let r = await janus(["apply", "-f", dir, "--dry-run"], env)
    assert.strictEqual(r.code, 0, r.stderr)
    assert.strictEqual(
      r.stdout,
      [
        "Plan: 7 to add, 0 to change, 0 to remove, 0 unchanged",
        "  + secret gh-token",
        "  + connection github",
        "  + endpoint get_repo",
        "  + endpoint rate_limit",
        "  + virtual server dev",
        "  + client token deploy",
        "  + client token laptop",
        "Dry run: nothing applied.",
        ""
      ].join("\n")
    )
    r = await janus(["export"], env)
    assert.strictEqual(r.code, 0, r.stderr)
    assert.strictEqual(r.stdout, "apiVersion: janus/v1\nkind: Configuration\n")

    // apply: the plan, then the one token value issued here, printed once; the deploy token's value is the env's
    r = await janus(["apply", "-f", dir], env)
    assert.strictEqual(r.code, 0, r.stderr)
    assert.match(r.stdout, /^Plan: 7 to add, 0 to change, 0 to remove, 0 unchanged\n/)
    assert.match(r.stdout, /\nApplied: 7 to add, 0 to change, 0 to remove, 0 unchanged\.\n/)
    assert.match(
      r.stdout,
      /Client token laptop \(shown once; store it now, it cannot be shown again\):\n {2}jns_[\w-]{43}\n$/
    )
    assert.notInclude(r.stdout + r.stderr, SECRET)
    assert.notInclude(r.stdout + r.stderr, TOKEN)

    // applying again: nothing to do (exit 0 with --detailed-exit-code)
    r = await janus(["apply", "-f", dir, "--detailed-exit-code"], env)
    assert.strictEqual(r.code, 0, r.stderr)
    assert.strictEqual(
      r.stdout,
      "Plan: 0 to add, 0 to change, 0 to remove, 7 unchanged\nNothing to apply: the database matches the document.\n"
    )

    // the export names everything, with no value
    r = await janus(["export", "--format", "json"], env)
    assert.strictEqual(r.code, 0, r.stderr)
    const exported = JSON.parse(r.stdout)
    assert.deepStrictEqual(exported.secrets, [{ name: "gh-token" }])
    assert.deepStrictEqual(exported.clientTokens.map((t: { name: string }) => t.name), ["deploy", "laptop"])
    assert.notInclude(r.stdout, SECRET)

    // one file changed, the other dropped: a plain apply lists the removals, --prune makes them; from stdin, JSON out
    const changed = base.replace("https://api.github.com", "https://github.example.com/api/v3")
      .replace(/ {2}- name: rate_limit[\s\S]*$/, "")
    r = await janus(["apply", "-f", "-", "--json", "--detailed-exit-code"], env, changed)
    assert.strictEqual(r.code, 2, r.stderr)
    const plain = JSON.parse(r.stdout)
    assert.isTrue(plain.applied)
    assert.deepStrictEqual(
      plain.plan.changes.map((c: { action: string; section: string; name: string; fields: Array<string> }) =>
        `${c.action} ${c.section} ${c.name} ${c.fields.join(",")}`
      ),
      [
        "change connections github baseUrl",
        "remove endpoints rate_limit ",
        "remove virtualServers dev ",
        "remove clientTokens deploy ",
        "remove clientTokens laptop "
      ]
    )
    assert.deepStrictEqual(plain.issuedTokens, [])
    r = await janus(["apply", "-f", "-", "--prune"], env, changed)
    assert.strictEqual(r.code, 0, r.stderr)
    assert.match(r.stdout, /^Plan: 0 to add, 0 to change, 4 to remove, 3 unchanged\n {2}- endpoint rate_limit\n/)
    r = await janus(["export", "-o", Path.join(home, "out.yaml")], env)
    assert.strictEqual(r.code, 0, r.stderr)
    assert.strictEqual(r.stdout, "")
    assert.deepStrictEqual(Yaml.parse(Fs.readFileSync(Path.join(home, "out.yaml"), "utf8")), {
      apiVersion: "janus/v1",
      kind: "Configuration",
      secrets: [{ name: "gh-token" }],
      connections: [{
        name: "github",
        kind: "rest",
        baseUrl: "https://github.example.com/api/v3",
        auth: { scheme: "bearer", secret: "gh-token" }
      }],
      endpoints: [Yaml.parse(base).endpoints[0]]
    })
  }, CLI_SEQUENCE_TIMEOUT)

  it("an invalid document is refused with its paths, and nothing is written", async () => {
    const home = tempHome()
    const env = { JANUS_HOME: home, JANUS_PORT: String(await freePort()) }
    const file = Path.join(home, "bad.yaml")
    Fs.writeFileSync(
      file,
      base.replace("https://api.github.com", "ftp://api.github.com").replace("secret: gh-token", "secret: gh-tokn")
        .replace("valueFrom: { env: GH_TOKEN }", "valueFrom: { env: JANUS_MASTER_KEY }") +
        "  - name: get_repo\n    connection: gitlab\n    method: GET\n    pathTemplate: /\n    inputSchema: { type: object }\n"
    )
    let r = await janus(["apply", "-f", file], env)
    assert.strictEqual(r.code, 1)
    assert.strictEqual(r.stdout, "")
    assert.match(r.stderr, /^Error: the configuration document is invalid \(4 problems\):\n/)
    assert.include(r.stderr, `  - ${file}: secrets[0].valueFrom.env: got "JANUS_MASTER_KEY", a variable of Janus's own`)
    assert.include(r.stderr, `  - ${file}: connections[0].auth.secret: refers to unknown secret "gh-tokn"`)
    assert.include(r.stderr, `  - ${file}: endpoints[2].name: got "get_repo", which ${file}: endpoints[0] already has`)
    assert.include(r.stderr, `  - ${file}: endpoints[2].connection: refers to unknown connection "gitlab"`)
    assert.match(r.stderr, /\n {2}Fix: correct the document at the paths above/)
    // doctor reads and checks JANUS_CONFIG_FILE (its schema and references; storage's checks come with an apply)
    const verdict = async (file: string) => {
      const ran = await janus(["doctor", "--json"], { ...env, JANUS_CONFIG_FILE: file })
      return JSON.parse(ran.stdout).checks.find((c: { check: string }) => c.check === "config file")
    }
    const failed = await verdict(file)
    assert.strictEqual(failed.verdict, "FAIL")
    assert.include(failed.detail, `${file}: connections[0].auth.secret: refers to unknown secret "gh-tokn"`)
    assert.include(failed.detail, `${file}: endpoints[2].connection: refers to unknown connection "gitlab"`)
    const good = Path.join(home, "good.yaml")
    Fs.writeFileSync(good, base)
    assert.deepStrictEqual(await verdict(good), {
      check: "config file",
      verdict: "ok",
      detail: `${good} is valid (4 resources)`
    })
    // the storage refusal shows once the document is otherwise valid
    Fs.writeFileSync(file, base.replace("https://api.github.com", "ftp://api.github.com"))
    r = await janus(["apply", "-f", file, "--dry-run"], { ...env, GH_TOKEN: SECRET })
    assert.strictEqual(r.code, 1)
    assert.include(r.stderr, `${file}: connections[0].baseUrl: got "ftp://api.github.com"; expected an absolute http`)
    r = await janus(["apply", "-f", Path.join(home, "missing.yaml")], env)
    assert.strictEqual(r.code, 1)
    assert.match(r.stderr, /cannot read the configuration document .*missing\.yaml: no such file or directory/)
    r = await janus(["export"], env)
    assert.strictEqual(r.stdout, "apiVersion: janus/v1\nkind: Configuration\n")
  }, CLI_SEQUENCE_TIMEOUT)
})
