/**
 * The program of a stdio upstream runs under this small supervisor, so that
 * it never outlives the gateway, however the gateway ends.
 *
 * Usage (by `StdioProcess.ts`): `node stdio-supervisor.ts <executable> [args...]`
 * with stdin, stdout and stderr piped to the gateway and a fourth descriptor
 * (fd 3), the lifeline, whose write end only the gateway holds.
 *
 * **Rules**
 *
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

  const child = spawn(command, args, { stdio: "inherit" })
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

  const lifeline = new Socket({ fd: 3, readable: true, writable: false })
  lifeline.on("data", () => {})
  lifeline.once("end", stopGroup)
  lifeline.once("close", stopGroup)
  lifeline.once("error", stopGroup)
}

main()
