/**
 * The program of a stdio upstream runs under this small supervisor, so that
 * it never outlives the gateway, however the gateway ends.
 *
 * Usage (by `StdioProcess.ts`): `node stdio-supervisor.ts <executable> [args...]`
 * with stdin, stdout and stderr piped to the gateway, a fourth descriptor
 * (fd 3), the lifeline, whose write end only the gateway holds, and a fifth
 * (fd 4) on which the gateway writes the program's setup (`{ env, cwd }`,
 * JSON) and closes it.
 *
 * **Rules**
 *
 * - The supervisor itself runs with the fixed, empty environment the gateway
 *   gives it; the program's environment and working directory (from fd 4)
 *   are given to the program only, never taken by the supervisor. The
 *   program is not started before the whole setup has arrived; a setup that
 *   is not one JSON object of text variables is refused (exit 2).
 * - The supervisor leads its own process group (the gateway spawns it
 *   detached); the program and everything it starts stay in that group, and
 *   inherit stdin, stdout and stderr directly (no copy in between).
 * - The gateway stopping it (drain, exit, a removed connection) signals the
 *   whole group: SIGTERM, then SIGKILL after a grace period.
 * - The lifeline closing means the gateway is gone (even `kill -9`): the
 *   supervisor sends SIGTERM to the group, SIGKILL after 2 seconds, and so
 *   ends itself too.
 * - When the program exits, whatever it left in the group is stopped and the
 *   supervisor exits with the program's code (128 + signal number when it
 *   was killed by a signal).
 * - Its first stderr line names the program's pid (`PID_LINE`), which the
 *   gateway reports (tests check it to prove no child outlives the gateway).
 */
import { spawn } from "node:child_process"
import { Socket } from "node:net"
import { constants } from "node:os"

/** The line the supervisor writes to stderr once the program runs (then its pid); `StdioProcess.ts` reads it. */
const PID_LINE = "janus-stdio-supervisor: program pid "

const GRACE_MS = 2_000

/** The program's environment and working directory, as read from fd 4 (`StdioProcess.SupervisorSetup`). */
interface Setup {
  readonly env: Record<string, string>
  readonly cwd: string | undefined
}

const parseSetup = (text: string): Setup | undefined => {
  try {
    const parsed = JSON.parse(text) as { env?: unknown; cwd?: unknown }
    const env = parsed.env
    if (typeof env !== "object" || env === null || Array.isArray(env)) return undefined
    if (!Object.values(env).every((value) => typeof value === "string")) return undefined
    if (parsed.cwd !== null && typeof parsed.cwd !== "string") return undefined
    return { env: { ...(env as Record<string, string>) }, cwd: parsed.cwd ?? undefined }
  } catch {
    return undefined
  }
}

/** Reads fd 4 to its end, then calls `done` with the setup. */
const readSetup = (done: (setup: Setup) => void) => {
  const chunks: Array<Buffer> = []
  const pipe = new Socket({ fd: 4, readable: true, writable: false })
  pipe.on("data", (chunk: Buffer) => chunks.push(chunk))
  pipe.once("error", () => {
    process.stderr.write("janus-stdio-supervisor: the program's setup could not be read\n")
    process.exit(2)
  })
  pipe.once("end", () => {
    const setup = parseSetup(Buffer.concat(chunks).toString("utf8"))
    if (setup === undefined) {
      process.stderr.write("janus-stdio-supervisor: the program's setup is not valid\n")
      process.exit(2)
    }
    pipe.destroy()
    done(setup)
  })
}

const main = () => {
  const [command, ...args] = process.argv.slice(2)
  if (command === undefined) {
    process.stderr.write("janus-stdio-supervisor: no program given\n")
    process.exit(2)
  }
  let stopping = false
  const signalGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-process.pid, signal)
    } catch {
      // the group is already gone
    }
  }
  const stopGroup = () => {
    if (stopping) return
    stopping = true
    signalGroup("SIGTERM")
    setTimeout(() => signalGroup("SIGKILL"), GRACE_MS).unref()
  }
  // A SIGTERM to the group (from the gateway, or from stopGroup) is for the program; the supervisor
  // stays until the program has exited, so its exit code reaches the gateway.
  process.on("SIGTERM", () => {
    stopping = true
  })
  process.on("SIGINT", () => {})

  const start = (setup: Setup) => {
    if (stopping) process.exit(128 + constants.signals.SIGTERM)
    // the program's environment is the setup's alone (no `extendEnv`): nothing of the supervisor's
    const child = spawn(command, args, {
      stdio: "inherit",
      env: setup.env,
      ...(setup.cwd === undefined ? {} : { cwd: setup.cwd })
    })
    child.once("spawn", () => process.stderr.write(`${PID_LINE}${child.pid}\n`))
    child.once("error", (error) => {
      process.stderr.write(`janus-stdio-supervisor: could not start the program: ${error.message}\n`)
      process.exit(127)
    })
    child.once("exit", (code, signal) => {
      // whatever the program left behind in the group goes with it (the supervisor ignores SIGTERM)
      signalGroup("SIGTERM")
      process.exit(code ?? 128 + (signal === null ? 0 : constants.signals[signal] ?? 0))
    })
  }
  readSetup(start)

  const lifeline = new Socket({ fd: 3, readable: true, writable: false })
  lifeline.on("data", () => {})
  lifeline.once("end", stopGroup)
  lifeline.once("close", stopGroup)
  lifeline.once("error", stopGroup)
}

main()
