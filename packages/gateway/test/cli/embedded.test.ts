/**
 * `janus migrate|secret|connection|endpoint|key|doctor` on an embedded
 * database in a temp JANUS_HOME, run as separate processes in order.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { CLI_SEQUENCE_TIMEOUT, freePort, janus, type Ran, tempHome } from "./run.ts"

const SECRET = "s3cr3t-VALUE-never-printed-4711"

describe("janus on an embedded database", () => {
  it("migrate, secret set, connection add/list/remove, endpoint add, key rotate, doctor", async () => {
    const home = tempHome()
    const env = { JANUS_HOME: home, JANUS_PORT: String(await freePort()) }
    const outputs: Array<Ran> = []
    const run = async (args: ReadonlyArray<string>, stdin?: string) => {
      const ran = await janus(args, env, stdin)
      outputs.push(ran)
      return ran
    }

    // migrate: names what it applied; the second run applies nothing
    let r = await run(["migrate"])
    assert.strictEqual(r.code, 0, r.stderr)
    assert.match(r.stdout, /Applied 13 migrations to embedded database in /)
    assert.match(r.stdout, /1 config/)

    // secret set from stdin (one trailing newline dropped), never echoed
    r = await run(["secret", "set", "gh_token"], SECRET + "\n")
    assert.strictEqual(r.code, 0, r.stderr)
    assert.match(r.stdout, /Secret gh_token set \(version 1\); its value is not shown/)
    // from --value-file, --json
    const valueFile = Path.join(home, "value.txt")
    Fs.writeFileSync(valueFile, SECRET)
    r = await run(["secret", "set", "gh_token", "--value-file", valueFile, "--json"])
    assert.strictEqual(r.code, 0, r.stderr)
    assert.deepStrictEqual(JSON.parse(r.stdout), { name: "gh_token", version: 2 })

    // connection add; a duplicate name; a missing secret is a note, not an error
    r = await run([
      "connection",
      "add",
      "github",
      "--base-url",
      "https://api.github.com",
      "--auth",
      "bearer",
      "--secret",
      "gh_token",
      "--allow",
      "10.0.0.0/8,*.internal"
    ])
    assert.strictEqual(r.code, 0, r.stderr)
    assert.match(r.stdout, /Added connection github \(id [0-9a-f-]+\) -> https:\/\/api\.github\.com/)
    assert.strictEqual(r.stderr, "")
    r = await run(["connection", "add", "github", "--base-url", "https://api.github.com"])
    assert.strictEqual(r.code, 1)
    assert.match(r.stderr, /Error: a connection named github already exists/)
    assert.match(r.stderr, /Fix: .*janus connection remove github/)
    r = await run([
      "connection",
      "add",
      "local",
      "--base-url",
      "http://127.0.0.1:9",
      "--auth",
      "header",
      "--header",
      "X-Api-Key",
      "--secret",
      "not_set_yet",
      "--json"
    ])
    assert.strictEqual(r.code, 0, r.stderr)
    assert.strictEqual(JSON.parse(r.stdout).auth.header, "X-Api-Key")
    assert.match(r.stderr, /secret not_set_yet is not set yet.*janus secret set not_set_yet/)

    r = await run(["connection", "list", "--json"])
    assert.strictEqual(r.code, 0, r.stderr)
    const listed = JSON.parse(r.stdout) as Array<{ name: string; url: string; egressAllowList: Array<string> | null }>
    assert.deepStrictEqual(listed.map((c) => c.name), ["github", "local"])
    assert.deepStrictEqual(listed[0]!.egressAllowList, ["10.0.0.0/8", "*.internal"])

    // an upstream MCP server: tool prefix, OAuth client credentials; flags that do not fit are refused
    r = await run([
      "connection",
      "add",
      "docs",
      "--mcp-url",
      "https://mcp.example.com/mcp",
      "--tool-prefix",
      "docs_",
      "--auth",
      "oauth",
      "--token-url",
      "https://auth.example.com/token",
      "--client-id",
      "janus",
      "--secret",
      "gh_token",
      "--json"
    ])
    assert.strictEqual(r.code, 0, r.stderr)
    assert.deepInclude(JSON.parse(r.stdout), {
      name: "docs",
      kind: "mcp",
      url: "https://mcp.example.com/mcp",
      transport: "streamable-http",
      toolPrefix: "docs_",
      auth: {
        scheme: "oauth-client-credentials",
        tokenUrl: "https://auth.example.com/token",
        clientId: "janus",
        secret: "gh_token"
      }
    })
    for (
      const [args, error] of [
        [["--base-url", "https://a.example.com", "--mcp-url", "https://b.example.com"], /cannot be used together/],
        [[], /no URL given/],
        [["--base-url", "https://a.example.com", "--tool-prefix", "p"], /--tool-prefix applies to MCP connections/],
        [["--base-url", "https://a.example.com", "--auth", "oauth", "--secret", "s"], /--auth oauth applies to MCP/],
        [
          ["--mcp-url", "https://b.example.com", "--auth", "oauth", "--secret", "s"],
          /needs --token-url and --client-id/
        ],
        [["--mcp-url", "https://b.example.com", "--tool-prefix", "bad prefix!"], /toolPrefix \(got "bad prefix!"\)/]
      ] as const
    ) {
      r = await run(["connection", "add", "refused", ...args])
      assert.strictEqual(r.code, 1, r.stdout)
      assert.match(r.stderr, error)
    }
    r = await run(["connection", "remove", "docs"])
    assert.strictEqual(r.code, 0, r.stderr)

    // endpoint add: ok, unknown connection, duplicate, undeclared path parameter, schema from a file
    r = await run([
      "endpoint",
      "add",
      "get_user",
      "--connection",
      "github",
      "--method",
      "GET",
      "--path",
      "/users/{username}",
      "--arg",
      "username=path",
      "--arg",
      "per_page=query"
    ])
    assert.strictEqual(r.code, 0, r.stderr)
    assert.match(r.stdout, /Added endpoint get_user: GET \/users\/\{username\} on github/)
    r = await run(["endpoint", "add", "x", "--connection", "nope", "--method", "GET", "--path", "/x"])
    assert.strictEqual(r.code, 1)
    assert.match(r.stderr, /Error: no connection is named nope/)
    r = await run(["endpoint", "add", "get_user", "--connection", "github", "--method", "GET", "--path", "/u"])
    assert.strictEqual(r.code, 1)
    assert.match(r.stderr, /an endpoint named get_user already exists/)
    r = await run(["endpoint", "add", "get_repo", "--connection", "github", "--method", "GET", "--path", "/r/{id}"])
    assert.strictEqual(r.code, 1)
    assert.match(r.stderr, /\{id\}/)
    assert.match(r.stderr, /Fix: declare every \{param\} of the path with --arg NAME=path/)
    const schemaFile = Path.join(home, "schema.json")
    Fs.writeFileSync(schemaFile, JSON.stringify({ type: "object", properties: { q: { type: "string" } } }))
    r = await run([
      "endpoint",
      "add",
      "search",
      "--connection",
      "github",
      "--method",
      "GET",
      "--path",
      "/search",
      "--arg",
      "q=query",
      "--schema",
      `@${schemaFile}`,
      "--json"
    ])
    assert.strictEqual(r.code, 0, r.stderr)
    assert.deepStrictEqual(JSON.parse(r.stdout).inputSchema.properties, { q: { type: "string" } })

    // connection remove: unknown, then ok
    r = await run(["connection", "remove", "nope"])
    assert.strictEqual(r.code, 1)
    assert.match(r.stderr, /Error: no connection is named nope\n {2}Fix: see `janus connection list`/)
    r = await run(["connection", "remove", "local"])
    assert.strictEqual(r.code, 0, r.stderr)
    assert.match(r.stdout, /Removed connection local/)

    // key rotate (key file mode): the file gains the new key first; no key is printed
    const keyFile = Path.join(home, "master.key")
    const before = Fs.readFileSync(keyFile, "utf8").trim()
    r = await run(["key", "rotate"])
    assert.strictEqual(r.code, 0, r.stderr)
    assert.match(r.stdout, /1 secret\(s\) re-encrypted/)
    const lines = Fs.readFileSync(keyFile, "utf8").trim().split("\n")
    assert.strictEqual(lines.length, 2)
    assert.strictEqual(lines[1], before)
    for (const line of lines) assert.notInclude(r.stdout + r.stderr, line)

    // doctor: every check has a verdict; the github connection is allowed by policy
    r = await run(["doctor", "--json"])
    assert.strictEqual(r.code, 0, r.stdout + r.stderr)
    const report = JSON.parse(r.stdout) as { ok: boolean; checks: Array<{ check: string; verdict: string }> }
    assert.isTrue(report.ok)
    const verdicts = Object.fromEntries(report.checks.map((c) => [c.check, c.verdict]))
    assert.strictEqual(verdicts["configuration"], "ok")
    assert.strictEqual(verdicts["master key"], "ok")
    assert.strictEqual(verdicts["database"], "ok")
    assert.include(["ok", "warn"], verdicts["egress github"]) // warn when DNS is unavailable here
    assert.strictEqual(verdicts["redis"], "skip")

    // the secret's value never appeared anywhere
    for (const o of outputs) assert.notInclude(o.stdout + o.stderr, SECRET)
  }, CLI_SEQUENCE_TIMEOUT)

  it("connection add --stdio: the program after --, refused unless JANUS_STDIO_COMMANDS allows it", async () => {
    const env = { JANUS_HOME: tempHome(), JANUS_PORT: String(await freePort()) }
    const run = (args: ReadonlyArray<string>) => janus(args, env)
    let r: Ran
    const memory = [
      "connection",
      "add",
      "memory",
      "--stdio",
      "--json",
      "--",
      "npx",
      "-y",
      "@modelcontextprotocol/server-memory"
    ]
    r = await run(memory)
    assert.strictEqual(r.code, 1, r.stdout)
    assert.match(r.stderr, /command \(got "npx"\): expected a command allowed by JANUS_STDIO_COMMANDS/)
    const allowing = { ...env, JANUS_STDIO_COMMANDS: "npx,/usr/bin/*" }
    r = await janus(
      [
        ...memory.slice(0, 5),
        "--env",
        "MODE=fast",
        "--env-secret",
        "TOKEN=gh_token",
        "--poll-interval",
        "5000",
        ...memory.slice(5)
      ],
      allowing
    )
    assert.strictEqual(r.code, 0, r.stderr)
    assert.deepInclude(JSON.parse(r.stdout), {
      name: "memory",
      kind: "mcp",
      transport: "stdio",
      command: "npx",
      args: ["-y", "@modelcontextprotocol/server-memory"],
      env: { MODE: "fast", TOKEN: { secret: "gh_token" } },
      cwd: null,
      pollIntervalMs: 5000
    })
    for (
      const [args, error] of [
        [["--stdio"], /--stdio needs a program/],
        [["--stdio", "--", "python3", "server.py"], /JANUS_STDIO_COMMANDS \(npx, \/usr\/bin\/\*\)/]
      ] as const
    ) {
      r = await janus(["connection", "add", "refused", ...args], allowing)
      assert.strictEqual(r.code, 1, r.stdout)
      assert.match(r.stderr, error)
    }
    r = await run(["connection", "remove", "memory"])
    assert.strictEqual(r.code, 0, r.stderr)
  }, CLI_SEQUENCE_TIMEOUT)
})
